// Multi-head Latent Attention (docs/deepseek-reference.md section 2.3), both forms, reading the
// paged cache in place (docs/kv_layout.md; no per-step conversion of the cached rows):
//   naive    K/V expanded from the cached latent through kv_b ("MHA mode"), for prefill chunks:
//            flash attention over tiles of kMlaPrefillTile cached positions, each tile expanded
//            once for all the chunk's tokens, online softmax per (token, head)
//            (kernels/cpu/attn_tile: positions in vector lanes, no horizontal sums);
//   absorbed W_UK folded into the query and W_UV applied after attention, attending directly
//            over the cached [kv_lora_rank latent ; d_rope key] rows ("MQA mode"), for decode:
//            kernels/cpu/mla_attn split-K over the thread pool (flash decoding).
// Both use softmax_scale = d_qk^-0.5 * mscale^2 and a causal mask offset by the cached length.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "base/check.h"
#include "base/phase_timer.h"
#include "kernels/cpu/attn_tile.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_parallel.h"
#include "kernels/cpu/mla_attn.h"
#include "kernels/cpu/vec_ops.h"
#include "model/deepseek/fp8_sim.h"
#include "model/runtime/model.h"

namespace dss {

namespace {
// The tokens [t_begin, t_end) of sequence i_seq and its kv length after this step.
struct SeqRange {
  int32_t t_begin, t_end, kv_len;
};
inline SeqRange seq_range(const ForwardBatch& b, int32_t i_seq) {
  return {b.seq_token_begin[static_cast<size_t>(i_seq)],
          b.seq_token_begin[static_cast<size_t>(i_seq) + 1],
          b.seq_kv_len[static_cast<size_t>(i_seq)]};
}

// Layer i_layer of the cache as sequence i_seq's kernels see it.
cpu::MlaCacheView cache_view(const KvCache& kv, int32_t i_layer, const ForwardBatch& b,
                             int32_t i_seq) {
  cpu::MlaCacheView v;
  v.rows = kv.latent_rows(i_layer);
  v.row_bytes = static_cast<int64_t>(kv.layout().latent_row_bytes());
  v.dtype = kv.layout().dtype;
  v.d_latent = kv.layout().d_latent;
  v.d_rope = kv.layout().d_rope;
  v.page_table = b.page_table.data() + static_cast<size_t>(i_seq) * b.max_pages;
  v.page_size = kv.layout().page_size;
  return v;
}

// Positions token t (at position pos) attends to: the V3.2 indexer's selection (sorted), or
// every position <= pos (ws.n_sel[t] < 0: dense; returns nullptr). Sets n.
inline const int32_t* attended_positions(const Workspace& ws, int32_t t, int32_t pos, int32_t topk,
                                         int32_t& n) {
  const int32_t n_sel = ws.n_sel[static_cast<size_t>(t)];
  n = n_sel < 0 ? pos + 1 : n_sel;
  return n_sel < 0 ? nullptr : ws.sel.data() + static_cast<size_t>(t) * topk;
}
}  // namespace

void Model::mla(int32_t i_layer, const ForwardBatch& b, KvCache& kv, Workspace& ws,
                AttnPath path) const {
  const ModelConfig& c = cfg_;
  const MlaWeights& w = w_.layers[static_cast<size_t>(i_layer)].mla;
  const int32_t T = b.n_tokens(), H = c.n_heads, d_qk = c.d_qk(), R = c.kv_lora_rank;
  const int32_t n_pairs = c.d_rope / 2;
  // Projections for all tokens of the step.
  DSS_PHASES(phase, kMlaProjIn);
  // q_a and kv_a read the same xn: one dispatch where the split allows (decode; W8A8 quantises
  // x per product inside mm()).
  if (act_quant_fp8_) {
    mm(w.q_a, ws.xn.data(), T, ws.q_a.data());
    mm(w.kv_a, ws.xn.data(), T, ws.kv_a.data());
  } else {
    const cpu::MatmulProduct qa_kva[] = {{&w.q_a, ws.xn.data(), ws.q_a.data()},
                                         {&w.kv_a, ws.xn.data(), ws.kv_a.data()}};
    cpu::matmul_parallel(*pool_, qa_kva, T);
  }
  for (int32_t t = 0; t < T; ++t) {
    float* qa = ws.q_a.data() + static_cast<size_t>(t) * c.q_lora_rank;
    cpu::rmsnorm(qa, w.q_a_norm, c.q_lora_rank, c.rms_eps, qa);
  }
  DSS_PHASE_NEXT(phase, kMlaQb);
  mm(w.q_b, ws.q_a.data(), T, ws.q.data());
  DSS_PHASE_NEXT(phase, kMlaRopeCache);
  // Normalise + rotate, write the cache rows, rotate the query rope parts.
  for (int32_t t = 0; t < T; ++t) {
    rope_.angles(b.positions[static_cast<size_t>(t)], ws.rope_cos.data(), ws.rope_sin.data());
    const float* kva = ws.kv_a.data() + static_cast<size_t>(t) * (R + c.d_rope);
    float* row = ws.kv_new.data() + static_cast<size_t>(t) * kv.layout().d_row();
    cpu::rmsnorm(kva, w.kv_a_norm, R, c.rms_eps, row);
    // V3.2 simulates an FP8 latent cache: e4m3 per 128 values, then back. (An fp8 cache stores
    // exactly these values; on V3 with an fp8 cache, KvCache::store quantises the same way.)
    if (w.has_indexer) {
      for (int32_t j = 0; j < R; j += 128) {
        const float s = act_quant_ue8m0(row + j, 128, row + j);
        for (int32_t k = j; k < j + 128; ++k) row[k] *= s;
      }
    }
    std::copy(kva + R, kva + R + c.d_rope, row + R);
    rope_rotate_interleaved(row + R, n_pairs, ws.rope_cos.data(), ws.rope_sin.data());
    for (int32_t h = 0; h < H; ++h) {
      float* q_pe = ws.q.data() + (static_cast<size_t>(t) * H + h) * d_qk + c.d_nope;
      rope_rotate_interleaved(q_pe, n_pairs, ws.rope_cos.data(), ws.rope_sin.data());
    }
  }
  if (w.has_indexer) indexer_keys(i_layer, b, ws);  // into the new rows' indexer part
  const int32_t d_row = kv.layout().d_row();
  for (int32_t t = 0; t < T; ++t) {
    kv.store(i_layer, b.kv_write_slots[static_cast<size_t>(t)],
             ws.kv_new.data() + static_cast<size_t>(t) * d_row);
  }
  DSS_PHASE_NEXT(phase, kMlaAttention);
  // Attention reads every row, the step's own included, from the cache (what decode will see).
  // Naive sequences one at a time; absorbed tokens in chunks across sequences, so a decode step's
  // W_UK / W_UV products are one matmul per head and chunk (results as for one token: matmul
  // results do not depend on the batch). A sequence's V3.2 selection is made before its tokens
  // are queued; it is kept per token (ws.sel), so later sequences' selections leave it intact.
  int32_t abs_toks[kMlaAbsorbChunk], abs_seqs[kMlaAbsorbChunk], n_abs = 0;
  for (int32_t s = 0; s < b.n_seqs(); ++s) {
    const auto [t_begin, t_end, L] = seq_range(b, s);
    if (t_end == t_begin) continue;
    DSS_CHECK(L <= ws.limits.max_kv_len, "kv_len ", L, " > workspace ", ws.limits.max_kv_len);
    if (w.has_indexer) indexer_select(i_layer, b, s, kv, ws);
    const bool naive = path == AttnPath::kNaive || (path == AttnPath::kAuto && t_end - t_begin > 1);
    if (naive) {
      mla_naive(i_layer, b, s, kv, ws);
      continue;
    }
    for (int32_t t = t_begin; t < t_end; ++t) {
      abs_toks[n_abs] = t;
      abs_seqs[n_abs] = s;
      if (++n_abs == kMlaAbsorbChunk) {
        mla_absorbed(i_layer, b, abs_toks, abs_seqs, n_abs, kv, ws);
        n_abs = 0;
      }
    }
  }
  if (n_abs > 0) mla_absorbed(i_layer, b, abs_toks, abs_seqs, n_abs, kv, ws);
  DSS_PHASE_NEXT(phase, kMlaOut);
  mm(w.o, ws.attn.data(), T, ws.tmp.data());
}

void Model::mla_naive(int32_t i_layer, const ForwardBatch& b, int32_t i_seq, const KvCache& kv,
                      Workspace& ws) const {
  const ModelConfig& c = cfg_;
  const MlaWeights& w = w_.layers[static_cast<size_t>(i_layer)].mla;
  const int32_t H = c.n_heads, d_qk = c.d_qk(), d_kv = c.d_nope + c.d_v;
  const int32_t dr = c.d_rope, K = c.index_topk;
  const auto [t_begin, t_end, L] = seq_range(b, i_seq);  // L <= max_kv_len: checked in mla()
  const int32_t n_new = t_end - t_begin, p0 = L - n_new;
  const cpu::MlaCacheView view = cache_view(kv, i_layer, b, i_seq);
  const float scale = c.softmax_scale();
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  constexpr int32_t kTile = kMlaPrefillTile;
  static_assert(kTile % cpu::kAttnTileAlign == 0);
  // Tiles some token attends to (dense tokens: every tile up to their position).
  const int32_t n_tiles = (L + kTile - 1) / kTile;
  std::fill(ws.tile_used.begin(), ws.tile_used.begin() + n_tiles, uint8_t{0});
  int32_t dense_end = 0;  // tiles [0, dense_end) are used by some dense token
  for (int32_t t = t_begin; t < t_end; ++t) {
    const int32_t pos = p0 + (t - t_begin);
    DSS_DCHECK(pos == b.positions[static_cast<size_t>(t)], "position mismatch");
    int32_t n = 0;
    const int32_t* ps = attended_positions(ws, t, pos, K, n);
    if (ps == nullptr) {
      dense_end = std::max(dense_end, pos / kTile + 1);
    } else {
      for (int32_t i = 0; i < n; ++i) ws.tile_used[static_cast<size_t>(ps[i] / kTile)] = 1;
    }
    for (int32_t h = 0; h < H; ++h) {  // running max / sum, head-major [H, max_tokens]
      ws.run_m[static_cast<size_t>(h) * ws.limits.max_tokens + t] = kNegInf;
      ws.run_l[static_cast<size_t>(h) * ws.limits.max_tokens + t] = 0.0f;
    }
    std::fill_n(ws.attn.data() + static_cast<size_t>(t) * H * c.d_v, H * c.d_v, 0.0f);
  }
  for (int32_t k = 0; k < n_tiles; ++k) {
    if (k >= dense_end && ws.tile_used[static_cast<size_t>(k)] == 0) continue;
    const int32_t q0 = k * kTile, nt = std::min(kTile, L - q0);
    cpu::mla_load_rows(view, nullptr, q0, nt, ws.tile_lat.data(), ws.tile_pe.data());
    mm(w.kv_b, ws.tile_lat.data(), nt, ws.tile_kv.data());  // [nt, H * (d_nope + d_v)]
    // The rope keys, shared by every head, transposed: [d_rope, kTile].
    for (int32_t j = 0; j < nt; ++j) {
      for (int32_t e = 0; e < dr; ++e)
        ws.tile_pet[static_cast<size_t>(e) * kTile + j] =
            ws.tile_pe[static_cast<size_t>(j) * dr + e];
    }
    // Tokens at positions < q0 do not see this tile; the others are [ta, n_new). Token i's valid
    // length in the tile: dense, up to its position; V3.2 sparse, up to its last selected
    // position in the tile (the unselected ones below it are masked to -inf per head).
    const int32_t ta = std::max(0, q0 - p0), n_tok = n_new - ta;
    int32_t* n_valid = ws.tile_nvalid.data();
    bool any_sparse = false;  // some token has a V3.2 selection: per-head masking needed
    for (int32_t i = 0; i < n_tok; ++i) {
      const int32_t t = t_begin + ta + i, pos = p0 + ta + i;
      int32_t n = 0;
      const int32_t* ps = attended_positions(ws, t, pos, K, n);
      if (ps == nullptr) {
        n_valid[i] = std::min(nt, pos + 1 - q0);
      } else {
        any_sparse = true;
        const int32_t* last = std::lower_bound(ps, ps + n, q0 + nt);
        n_valid[i] = last != ps && last[-1] >= q0 ? last[-1] - q0 + 1 : 0;
      }
    }
    // Per head, three kernels (kernels/cpu/attn_tile.h): S = Q_h K_h^T over the tile (keys
    // transposed [d_nope + d_rope, kTile]: the head's nope keys here, the shared rope keys above;
    // queries and values read in place), the online-softmax step, then o = o * corr + P V_h. Their
    // arithmetic is per token, so a token's result does not depend on the chunking.
    pool_->parallel_for(H, 1, [&](int64_t h0, int64_t h1, int32_t i_thread) {
      const size_t th = static_cast<size_t>(i_thread);
      float* S = ws.tile_s.data() + th * ws.limits.max_tokens * kTile;
      float* kt = ws.tile_kt.data() + th * c.d_nope * kTile;
      float* corr = ws.tile_corr.data() + th * ws.limits.max_tokens;
      for (auto h = static_cast<int32_t>(h0); h < h1; ++h) {
        for (int32_t j = 0; j < nt; ++j) {
          const float* kv_j = ws.tile_kv.data() + (static_cast<size_t>(j) * H + h) * d_kv;
          for (int32_t e = 0; e < c.d_nope; ++e) kt[static_cast<size_t>(e) * kTile + j] = kv_j[e];
        }
        const size_t row0 = static_cast<size_t>(t_begin + ta) * H + h;  // token ta, head h
        cpu::attn_tile_scores(ws.q.data() + row0 * d_qk, int64_t{H} * d_qk, n_tok, kt, c.d_nope,
                              ws.tile_pet.data(), dr, kTile, kTile, n_valid, S, kTile);
        for (int32_t i = 0; any_sparse && i < n_tok; ++i) {  // V3.2: mask the unselected
          const int32_t t = t_begin + ta + i;
          int32_t n = 0;
          const int32_t* ps = attended_positions(ws, t, p0 + ta + i, K, n);
          if (ps == nullptr) continue;
          const int32_t* it = std::lower_bound(ps, ps + n, q0);
          float* row = S + static_cast<size_t>(i) * kTile;
          for (int32_t j = 0; j < n_valid[i]; ++j) {
            if (it != ps + n && *it == q0 + j) {
              ++it;
            } else {
              row[j] = kNegInf;
            }
          }
        }
        const size_t mh = static_cast<size_t>(h) * ws.limits.max_tokens + t_begin + ta;
        cpu::attn_tile_softmax(S, kTile, n_tok, kTile, n_valid, scale, ws.run_m.data() + mh,
                               ws.run_l.data() + mh, corr);
        cpu::attn_tile_pv(
            S, kTile, n_tok, n_valid, ws.tile_kv.data() + static_cast<size_t>(h) * d_kv + c.d_nope,
            int64_t{H} * d_kv, c.d_v, corr, ws.attn.data() + row0 * c.d_v, int64_t{H} * c.d_v);
      }
    });
  }
  for (int32_t t = t_begin; t < t_end; ++t) {
    for (int32_t h = 0; h < H; ++h) {
      const float inv =
          1.0f / ws.run_l[static_cast<size_t>(h) * ws.limits.max_tokens + static_cast<size_t>(t)];
      float* o = ws.attn.data() + (static_cast<size_t>(t) * H + h) * c.d_v;
      for (int32_t d = 0; d < c.d_v; ++d) o[d] *= inv;
    }
  }
}

void Model::mla_absorbed(int32_t i_layer, const ForwardBatch& b, const int32_t* toks,
                         const int32_t* seqs, int32_t n, const KvCache& kv, Workspace& ws) const {
  const ModelConfig& c = cfg_;
  const MlaWeights& w = w_.layers[static_cast<size_t>(i_layer)].mla;
  const int32_t H = c.n_heads, d_qk = c.d_qk(), R = c.kv_lora_rank, d_kv = c.d_nope + c.d_v;
  const int32_t dr = c.d_rope, dn = c.d_nope;
  const auto HR = static_cast<size_t>(H) * R, n_uv = static_cast<size_t>(w.kv_b.n_rows);
  DSS_CHECK(n >= 1 && n <= kMlaAbsorbChunk, "absorbed chunk of ", n, " tokens");
  const float scale = c.softmax_scale();
  const auto n_scratch = static_cast<size_t>(cpu::mla_attn_scratch_floats(H, R, dr));
  const size_t x_stride = static_cast<size_t>(kMlaAbsorbChunk) * std::max(dn, R);
  // q_lat[j]_h = W_UK_h^T q_nope[j]_h (R) for the chunk's n tokens at once: rows [h R, (h + 1) R)
  // of w_uk_t times head h's q_nope rows gathered [n, d_nope] (matmul_rows' y[j, r] lands at
  // q_lat + j H R + r); q_pe[j]_h copied contiguous. xg: the thread's gather buffer.
  auto uk_heads = [&](int32_t h0, int32_t h1, float* xg) {
    for (int32_t h = h0; h < h1; ++h) {
      for (int32_t j = 0; j < n; ++j) {
        const float* q = ws.q.data() + (static_cast<size_t>(toks[j]) * H + h) * d_qk;
        std::copy(q, q + dn, xg + static_cast<size_t>(j) * dn);
        std::copy(q + dn, q + d_qk, ws.q_pe.data() + (static_cast<size_t>(j) * H + h) * dr);
      }
      cpu::matmul_rows(w.w_uk_t, xg, n, ws.q_lat.data(), int64_t{h} * R, int64_t{h + 1} * R);
    }
  };
  // o[j]_h = W_UV_h o_lat[j]_h (d_v): kv_b's rows [h d_kv + d_nope, (h + 1) d_kv) times head h's
  // o_lat rows gathered [n, R], for the chunk at once.
  auto uv_heads = [&](int32_t h0, int32_t h1, float* xg) {
    for (int32_t h = h0; h < h1; ++h) {
      for (int32_t j = 0; j < n; ++j) {
        const float* o = ws.o_lat.data() + static_cast<size_t>(j) * HR + static_cast<size_t>(h) * R;
        std::copy(o, o + R, xg + static_cast<size_t>(j) * R);
      }
      const int64_t r0 = int64_t{h} * d_kv + dn, r1 = int64_t{h + 1} * d_kv;
      cpu::matmul_rows(w.kv_b, xg, n, ws.uv.data(), r0, r1);
      for (int32_t j = 0; j < n; ++j) {
        const float* uv = ws.uv.data() + static_cast<size_t>(j) * n_uv;
        std::copy(uv + r0, uv + r1,
                  ws.attn.data() + (static_cast<size_t>(toks[j]) * H + h) * c.d_v);
      }
    }
  };
  // With the bf16-dot matmuls (matmul_bf16: the CPU has AVX512-BF16) the attention over a bf16
  // cache runs by vdpbf16ps too, q and the probabilities rounded to bf16 as DeepSeek's bf16
  // inference holds them (cpu::mla_attn_partial_bf16).
  const auto attn_partial = [&](const cpu::MlaCacheView& v, auto&&... args) {
    if (matmul_bf16() && cpu::mla_attn_bf16_takes(v)) {
      cpu::mla_attn_partial_bf16(v, args...);
    } else {
      cpu::mla_attn_partial(v, args...);
    }
  };
  // Attention, split-K over each token's attended positions in parts that depend only on its
  // count (never on the thread count), merged in part order: bit-identical for any number of
  // threads.
  struct TokenAttn {
    cpu::MlaCacheView view;
    const int32_t* ps;
    int32_t n_att, n_parts, part, first_part;
  };
  std::array<TokenAttn, kMlaAbsorbChunk> ta;
  for (int32_t j = 0; j < n; ++j) {
    const auto [t_begin, t_end, L] = seq_range(b, seqs[j]);
    const int32_t t = toks[j], pos = L - (t_end - t_begin) + (t - t_begin);
    TokenAttn& a = ta[static_cast<size_t>(j)];
    a.view = cache_view(kv, i_layer, b, seqs[j]);
    a.ps = attended_positions(ws, t, pos, c.index_topk, a.n_att);
    a.n_parts = std::min(kMlaDecodeMaxParts, (a.n_att + kMlaDecodePart - 1) / kMlaDecodePart);
    a.part = (a.n_att + a.n_parts - 1) / a.n_parts;
  }
  // The heads in n_threads equal contiguous ranges (each head's product is a few KB, and guided
  // claims of 1-2 heads cost more than they balanced; batch-1 decode, per layer: W_UK
  // 18-19 -> 13-14 us, W_UV 21-25 -> 17-19 us).
  const int64_t n_ranges = pool_->n_threads();
  if (n == 1 && ta[0].n_parts == 1 && n_ranges > 1) {
    // One token attending in one part (batch-1 decode at short contexts): its one part would
    // leave the other threads idle, so each thread takes a head range through W_UK, the
    // attention of its heads (mla_attn_partial's per-head arithmetic does not depend on which
    // heads a call covers) and W_UV, in one dispatch instead of three. Bit-identical to the
    // token-parts path (ForwardInvariants). Not for more tokens: the kernel keeps heads in vector
    // lanes padded to 16, so a thread scoring every token over a few heads would do up to n
    // times a token part's work.
    pool_->parallel_for(n_ranges, 1, [&](int64_t i0, int64_t i1, int32_t i_thread) {
      const auto h0 = static_cast<int32_t>(H * i0 / n_ranges);
      const auto h1 = static_cast<int32_t>(H * i1 / n_ranges), nh = h1 - h0;
      if (nh == 0) return;  // more threads than heads
      const auto th = static_cast<size_t>(i_thread);
      float* xg = ws.absorb_x.data() + th * x_stride;
      uk_heads(h0, h1, xg);
      float* scratch = ws.attn_scratch.data() + th * n_scratch;
      const TokenAttn& a = ta[0];
      const auto h = static_cast<size_t>(h0);  // part 0's buffers, this thread's heads
      attn_partial(a.view, a.ps, 0, a.n_att, ws.q_lat.data() + h * R, ws.q_pe.data() + h * dr, nh,
                   scale, scratch, ws.part_m.data() + h, ws.part_l.data() + h,
                   ws.part_o.data() + h * R);
      cpu::mla_attn_merge(1, ws.part_m.data() + h, ws.part_l.data() + h, ws.part_o.data() + h * R,
                          nh, R, ws.o_lat.data() + h * R);
      uv_heads(h0, h1, xg);
    });
    return;
  }
  pool_->parallel_for(n_ranges, 1, [&](int64_t i0, int64_t i1, int32_t i_thread) {
    uk_heads(static_cast<int32_t>(H * i0 / n_ranges), static_cast<int32_t>(H * i1 / n_ranges),
             ws.absorb_x.data() + static_cast<size_t>(i_thread) * x_stride);
  });
  // The parts of consecutive tokens, up to kMlaDecodeMaxParts in all, run in one dispatch (a
  // decode step's short-context tokens have one part each: one at a time they ran on the caller
  // alone); a one-part token is merged by the thread that ran it, the others after.
  for (int32_t j0 = 0, j1 = 0; j0 < n; j0 = j1) {
    // Tokens [j0, j1): their parts fill the part buffers in token order.
    int32_t units = 0;
    for (j1 = j0; j1 < n && units + ta[static_cast<size_t>(j1)].n_parts <= kMlaDecodeMaxParts;
         ++j1) {
      ta[static_cast<size_t>(j1)].first_part = units;
      units += ta[static_cast<size_t>(j1)].n_parts;
    }
    pool_->parallel_for(units, 1, [&](int64_t u0, int64_t u1, int32_t i_thread) {
      float* scratch = ws.attn_scratch.data() + static_cast<size_t>(i_thread) * n_scratch;
      int32_t j = j0;
      for (int64_t u = u0; u < u1; ++u) {
        while (u >= ta[static_cast<size_t>(j)].first_part + ta[static_cast<size_t>(j)].n_parts) ++j;
        const TokenAttn& a = ta[static_cast<size_t>(j)];
        const int64_t i = u - a.first_part;
        const auto iu = static_cast<size_t>(u);
        attn_partial(a.view, a.ps, i * a.part, std::min<int64_t>(a.n_att, (i + 1) * a.part),
                     ws.q_lat.data() + static_cast<size_t>(j) * HR,
                     ws.q_pe.data() + static_cast<size_t>(j) * H * dr, H, scale, scratch,
                     ws.part_m.data() + iu * H, ws.part_l.data() + iu * H,
                     ws.part_o.data() + iu * H * R);
        if (a.n_parts == 1) {
          cpu::mla_attn_merge(1, ws.part_m.data() + iu * H, ws.part_l.data() + iu * H,
                              ws.part_o.data() + iu * H * R, H, R,
                              ws.o_lat.data() + static_cast<size_t>(j) * HR);
        }
      }
    });
    for (int32_t j = j0; j < j1; ++j) {
      const TokenAttn& a = ta[static_cast<size_t>(j)];
      if (a.n_parts == 1) continue;
      const auto f = static_cast<size_t>(a.first_part);
      cpu::mla_attn_merge(a.n_parts, ws.part_m.data() + f * H, ws.part_l.data() + f * H,
                          ws.part_o.data() + f * H * R, H, R,
                          ws.o_lat.data() + static_cast<size_t>(j) * HR);
    }
  }
  pool_->parallel_for(n_ranges, 1, [&](int64_t i0, int64_t i1, int32_t i_thread) {
    uv_heads(static_cast<int32_t>(H * i0 / n_ranges), static_cast<int32_t>(H * i1 / n_ranges),
             ws.absorb_x.data() + static_cast<size_t>(i_thread) * x_stride);
  });
}

}  // namespace dss
