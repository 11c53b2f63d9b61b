// CpuBackend's Multi-head Latent Attention (docs/deepseek-reference.md section 2.3), both forms,
// reading the
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
#include <limits>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_scratch.h"
#include "base/check.h"
#include "kernels/cpu/attn_tile.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/mla_attn.h"

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
// every position <= pos (at.n_sel[t] < 0: dense; returns nullptr). Sets n.
inline const int32_t* attended_positions(const AttendedSets& at, int32_t t, int32_t pos,
                                         int32_t topk, int32_t& n) {
  const int32_t n_sel = at.n_sel[t];
  n = n_sel < 0 ? pos + 1 : n_sel;
  return n_sel < 0 ? nullptr : at.sel + static_cast<size_t>(t) * topk;
}
}  // namespace

namespace {

// The naive form over one sequence's new tokens [t_begin, t_end) at positions [p0, kv_len): the
// state shared by its steps (prefill_tile runs one tile of kMlaPrefillTile cached positions).
struct PrefillSeq {
  const MlaAttnArgs& a;
  CpuScratch& s;
  SeqRange r;
  int32_t p0;
  cpu::MlaCacheView view;

  int32_t n_tokens() const { return r.t_end - r.t_begin; }
  // Positions token t (at pos) attends to (attended_positions).
  const int32_t* attended(int32_t t, int32_t pos, int32_t& n) const {
    return attended_positions(a.attended, t, pos, a.attended.topk, n);
  }
  float* run(std::vector<float>& v, int32_t h, int32_t t) const {  // [n_heads, max_tokens]
    return v.data() + static_cast<size_t>(h) * s.limits.max_tokens + t;
  }
};

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int32_t kTile = kMlaPrefillTile;
static_assert(kTile % cpu::kAttnTileAlign == 0);

// Marks the tiles some token attends to (s.tile_used; dense tokens: every tile up to their
// position, returned as dense_end) and resets the tokens' online-softmax state and outputs.
int32_t prefill_begin(const PrefillSeq& q, int32_t n_tiles) {
  const MlaShape& c = q.a.shape;
  CpuScratch& s = q.s;
  std::fill(s.tile_used.begin(), s.tile_used.begin() + n_tiles, uint8_t{0});
  int32_t dense_end = 0;  // tiles [0, dense_end) are used by some dense token
  for (int32_t t = q.r.t_begin; t < q.r.t_end; ++t) {
    const int32_t pos = q.p0 + (t - q.r.t_begin);
    DSS_DCHECK(pos == q.a.batch->positions[static_cast<size_t>(t)], "position mismatch");
    int32_t n = 0;
    const int32_t* ps = q.attended(t, pos, n);
    if (ps == nullptr) {
      dense_end = std::max(dense_end, pos / kTile + 1);
    } else {
      for (int32_t i = 0; i < n; ++i) s.tile_used[static_cast<size_t>(ps[i] / kTile)] = 1;
    }
    for (int32_t h = 0; h < c.n_heads; ++h) {
      *q.run(s.run_m, h, t) = kNegInf;
      *q.run(s.run_l, h, t) = 0.0f;
    }
    std::fill_n(q.a.attn + static_cast<size_t>(t) * c.n_heads * c.d_v, c.n_heads * c.d_v, 0.0f);
  }
  return dense_end;
}

// Token i's valid length in the tile [q0, q0 + nt) (tokens [ta, n_new) of the sequence see it):
// dense, up to its position; V3.2 sparse, up to its last selected position in the tile (the
// unselected ones below it are masked to -inf per head). Returns whether any token is sparse.
bool tile_valid_lengths(const PrefillSeq& q, int32_t q0, int32_t nt, int32_t ta, int32_t* n_valid) {
  bool any_sparse = false;
  for (int32_t i = 0; i < q.n_tokens() - ta; ++i) {
    const int32_t t = q.r.t_begin + ta + i, pos = q.p0 + ta + i;
    int32_t n = 0;
    const int32_t* ps = q.attended(t, pos, n);
    if (ps == nullptr) {
      n_valid[i] = std::min(nt, pos + 1 - q0);
    } else {
      any_sparse = true;
      const int32_t* last = std::lower_bound(ps, ps + n, q0 + nt);
      n_valid[i] = last != ps && last[-1] >= q0 ? last[-1] - q0 + 1 : 0;
    }
  }
  return any_sparse;
}

// V3.2: sets the scores S[i, j] of positions q0 + j that token i did not select to -inf.
void mask_unselected(const PrefillSeq& q, int32_t q0, int32_t ta, const int32_t* n_valid,
                     float* S) {
  for (int32_t i = 0; i < q.n_tokens() - ta; ++i) {
    int32_t n = 0;
    const int32_t* ps = q.attended(q.r.t_begin + ta + i, q.p0 + ta + i, n);
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
}

// Per head of [h0, h1), three kernels (kernels/cpu/attn_tile.h): S = Q_h K_h^T over the tile
// (keys transposed [d_nope + d_rope, kTile]: the head's nope keys here, the shared rope keys in
// s.tile_pet; queries and values read in place), the online-softmax step, then
// o = o * corr + P V_h. Their arithmetic is per token, so a token's result does not depend on
// the chunking. i_thread selects the thread's score / key / correction buffers.
void prefill_tile_heads(const PrefillSeq& q, int32_t q0, int32_t nt, int32_t ta, bool any_sparse,
                        int64_t h0, int64_t h1, int32_t i_thread) {
  const MlaShape& c = q.a.shape;
  CpuScratch& s = q.s;
  const int32_t H = c.n_heads, d_qk = c.d_qk(), d_kv = c.d_nope + c.d_v, n_tok = q.n_tokens() - ta;
  const int32_t* n_valid = s.tile_nvalid.data();
  const auto th = static_cast<size_t>(i_thread);
  float* S = s.tile_s.data() + th * s.limits.max_tokens * kTile;
  float* kt = s.tile_kt.data() + th * c.d_nope * kTile;
  float* corr = s.tile_corr.data() + th * s.limits.max_tokens;
  for (auto h = static_cast<int32_t>(h0); h < h1; ++h) {
    for (int32_t j = 0; j < nt; ++j) {
      const float* kv_j = s.tile_kv.data() + (static_cast<size_t>(j) * H + h) * d_kv;
      for (int32_t e = 0; e < c.d_nope; ++e) kt[static_cast<size_t>(e) * kTile + j] = kv_j[e];
    }
    const size_t row0 = static_cast<size_t>(q.r.t_begin + ta) * H + h;  // token ta, head h
    cpu::attn_tile_scores(q.a.q + row0 * d_qk, int64_t{H} * d_qk, n_tok, kt, c.d_nope,
                          s.tile_pet.data(), c.d_rope, kTile, kTile, n_valid, S, kTile);
    if (any_sparse) mask_unselected(q, q0, ta, n_valid, S);
    const int32_t t0 = q.r.t_begin + ta;
    cpu::attn_tile_softmax(S, kTile, n_tok, kTile, n_valid, c.softmax_scale, q.run(s.run_m, h, t0),
                           q.run(s.run_l, h, t0), corr);
    cpu::attn_tile_pv(S, kTile, n_tok, n_valid,
                      s.tile_kv.data() + static_cast<size_t>(h) * d_kv + c.d_nope,
                      int64_t{H} * d_kv, c.d_v, corr, q.a.attn + row0 * c.d_v, int64_t{H} * c.d_v);
  }
}

}  // namespace

void CpuBackend::mla_prefill(const MlaAttnArgs& a, int32_t i_seq, BackendScratch& scratch) const {
  CpuScratch& s = cpu_scratch(scratch);
  const MlaShape& c = a.shape;
  const SeqRange r = seq_range(*a.batch, i_seq);  // kv_len <= max_kv_len: checked by the block
  const PrefillSeq q{a, s, r, r.kv_len - (r.t_end - r.t_begin),
                     cache_view(*a.kv, a.i_layer, *a.batch, i_seq)};
  const int32_t n_tiles = (r.kv_len + kTile - 1) / kTile;
  const int32_t dense_end = prefill_begin(q, n_tiles);
  for (int32_t k = 0; k < n_tiles; ++k) {
    if (k >= dense_end && s.tile_used[static_cast<size_t>(k)] == 0) continue;
    const int32_t q0 = k * kTile, nt = std::min(kTile, r.kv_len - q0);
    cpu::mla_load_rows(q.view, nullptr, q0, nt, s.tile_lat.data(), s.tile_pe.data());
    linear(*a.kv_b, s.tile_lat.data(), nt, s.tile_kv.data(), s);  // [nt, H * (d_nope + d_v)]
    // The rope keys, shared by every head, transposed: [d_rope, kTile].
    for (int32_t j = 0; j < nt; ++j) {
      for (int32_t e = 0; e < c.d_rope; ++e)
        s.tile_pet[static_cast<size_t>(e) * kTile + j] =
            s.tile_pe[static_cast<size_t>(j) * c.d_rope + e];
    }
    // Tokens at positions < q0 do not see this tile; the others are [ta, n_new).
    const int32_t ta = std::max(0, q0 - q.p0);
    const bool any_sparse = tile_valid_lengths(q, q0, nt, ta, s.tile_nvalid.data());
    pool_->parallel_for(c.n_heads, 1, [&](int64_t h0, int64_t h1, int32_t i_thread) {
      prefill_tile_heads(q, q0, nt, ta, any_sparse, h0, h1, i_thread);
    });
  }
  for (int32_t t = r.t_begin; t < r.t_end; ++t) {
    for (int32_t h = 0; h < c.n_heads; ++h) {
      const float inv = 1.0f / *q.run(s.run_l, h, t);
      float* o = a.attn + (static_cast<size_t>(t) * c.n_heads + h) * c.d_v;
      for (int32_t d = 0; d < c.d_v; ++d) o[d] *= inv;
    }
  }
}

namespace {

// Attention of one absorbed-form token: split-K over its attended positions in parts that depend
// only on their count (never on the thread count), merged in part order: bit-identical for any
// number of threads.
struct TokenAttn {
  cpu::MlaCacheView view;
  const int32_t* ps;  // attended positions (nullptr: 0 .. n_att - 1)
  int32_t n_att, n_parts, part, first_part;
};

// One chunk of n <= kMlaAbsorbChunk absorbed-form tokens toks[j] of sequences seqs[j].
class DecodeChunk {
 public:
  DecodeChunk(const MlaAttnArgs& a, const int32_t* toks, const int32_t* seqs, int32_t n,
              CpuScratch& s, bool bf16_attention)
      : a_(a),
        c_(a.shape),
        toks_(toks),
        n_(n),
        s_(s),
        bf16_(bf16_attention),
        HR_(static_cast<size_t>(c_.n_heads) * c_.kv_lora_rank),
        n_scratch_(static_cast<size_t>(
            cpu::mla_attn_scratch_floats(c_.n_heads, c_.kv_lora_rank, c_.d_rope))),
        x_stride_(static_cast<size_t>(kMlaAbsorbChunk) * std::max(c_.d_nope, c_.kv_lora_rank)) {
    DSS_CHECK(n >= 1 && n <= kMlaAbsorbChunk, "absorbed chunk of ", n, " tokens");
    for (int32_t j = 0; j < n; ++j) {
      const SeqRange r = seq_range(*a.batch, seqs[j]);
      const int32_t t = toks[j], pos = r.kv_len - (r.t_end - r.t_begin) + (t - r.t_begin);
      TokenAttn& ta = ta_[static_cast<size_t>(j)];
      ta.view = cache_view(*a.kv, a.i_layer, *a.batch, seqs[j]);
      ta.ps = attended_positions(a.attended, t, pos, a.attended.topk, ta.n_att);
      ta.n_parts = std::min(kMlaDecodeMaxParts, (ta.n_att + kMlaDecodePart - 1) / kMlaDecodePart);
      ta.part = (ta.n_att + ta.n_parts - 1) / ta.n_parts;
    }
  }

  // One token attending in one part (batch-1 decode at short contexts).
  bool single_part() const { return n_ == 1 && ta_[0].n_parts == 1; }
  float* gather(int32_t i_thread) const {
    return s_.absorb_x.data() + static_cast<size_t>(i_thread) * x_stride_;
  }

  // q_lat[j]_h = W_UK_h^T q_nope[j]_h (R) for the chunk's n tokens at once: rows [h R, (h + 1) R)
  // of w_uk_t times head h's q_nope rows gathered [n, d_nope] (matmul_rows' y[j, r] lands at
  // q_lat + j H R + r); q_pe[j]_h copied contiguous. xg: the thread's gather buffer.
  void uk_heads(int32_t h0, int32_t h1, float* xg) const {
    const int32_t H = c_.n_heads, R = c_.kv_lora_rank, dn = c_.d_nope, d_qk = c_.d_qk();
    for (int32_t h = h0; h < h1; ++h) {
      for (int32_t j = 0; j < n_; ++j) {
        const float* q = a_.q + (static_cast<size_t>(toks_[j]) * H + h) * d_qk;
        std::copy(q, q + dn, xg + static_cast<size_t>(j) * dn);
        std::copy(q + dn, q + d_qk, s_.q_pe.data() + (static_cast<size_t>(j) * H + h) * c_.d_rope);
      }
      cpu::matmul_rows(*a_.w_uk_t, xg, n_, s_.q_lat.data(), int64_t{h} * R, int64_t{h + 1} * R);
    }
  }

  // o[j]_h = W_UV_h o_lat[j]_h (d_v): kv_b's rows [h d_kv + d_nope, (h + 1) d_kv) times head h's
  // o_lat rows gathered [n, R], for the chunk at once.
  void uv_heads(int32_t h0, int32_t h1, float* xg) const {
    const int32_t H = c_.n_heads, R = c_.kv_lora_rank, d_kv = c_.d_nope + c_.d_v;
    const auto n_uv = static_cast<size_t>(a_.kv_b->n_rows);
    for (int32_t h = h0; h < h1; ++h) {
      for (int32_t j = 0; j < n_; ++j) {
        const float* o =
            s_.o_lat.data() + static_cast<size_t>(j) * HR_ + static_cast<size_t>(h) * R;
        std::copy(o, o + R, xg + static_cast<size_t>(j) * R);
      }
      const int64_t r0 = int64_t{h} * d_kv + c_.d_nope, r1 = int64_t{h + 1} * d_kv;
      cpu::matmul_rows(*a_.kv_b, xg, n_, s_.uv.data(), r0, r1);
      for (int32_t j = 0; j < n_; ++j) {
        const float* uv = s_.uv.data() + static_cast<size_t>(j) * n_uv;
        std::copy(uv + r0, uv + r1, a_.attn + (static_cast<size_t>(toks_[j]) * H + h) * c_.d_v);
      }
    }
  }

  // With the bf16-dot matmuls the attention over a bf16 cache runs by vdpbf16ps too, q and the
  // probabilities rounded to bf16 as DeepSeek's bf16 inference holds them
  // (cpu::mla_attn_partial_bf16). Part buffers at index `unit`, heads [h, h + nh).
  void partial(const TokenAttn& ta, int64_t i_begin, int64_t i_end, const float* q_lat,
               const float* q_pe, int32_t nh, int32_t i_thread, size_t out) const {
    float* scratch = s_.attn_scratch.data() + static_cast<size_t>(i_thread) * n_scratch_;
    const size_t R = static_cast<size_t>(c_.kv_lora_rank);
    auto* f = bf16_ && cpu::mla_attn_bf16_takes(ta.view) ? &cpu::mla_attn_partial_bf16
                                                         : &cpu::mla_attn_partial;
    f(ta.view, ta.ps, i_begin, i_end, q_lat, q_pe, nh, c_.softmax_scale, scratch,
      s_.part_m.data() + out, s_.part_l.data() + out, s_.part_o.data() + out * R);
  }

  // Heads [h0, h1) of the single-part token through W_UK, attention and W_UV (one thread).
  void single_part_heads(int32_t h0, int32_t h1, int32_t i_thread) const {
    const auto R = static_cast<size_t>(c_.kv_lora_rank);
    float* xg = gather(i_thread);
    uk_heads(h0, h1, xg);
    const auto h = static_cast<size_t>(h0);  // part 0's buffers, this thread's heads
    partial(ta_[0], 0, ta_[0].n_att, s_.q_lat.data() + h * R, s_.q_pe.data() + h * c_.d_rope,
            h1 - h0, i_thread, h);
    cpu::mla_attn_merge(1, s_.part_m.data() + h, s_.part_l.data() + h, s_.part_o.data() + h * R,
                        h1 - h0, c_.kv_lora_rank, s_.o_lat.data() + h * R);
    uv_heads(h0, h1, xg);
  }

  // The parts of tokens [j0, j1) (numbered from first_part in token order): units [u0, u1).
  // A one-part token is merged by the thread that ran it.
  void token_parts(int32_t j0, int64_t u0, int64_t u1, int32_t i_thread) const {
    const int32_t H = c_.n_heads;
    int32_t j = j0;
    for (int64_t u = u0; u < u1; ++u) {
      while (u >= ta_[static_cast<size_t>(j)].first_part + ta_[static_cast<size_t>(j)].n_parts) ++j;
      const TokenAttn& ta = ta_[static_cast<size_t>(j)];
      const int64_t i = u - ta.first_part;
      const auto iu = static_cast<size_t>(u);
      partial(ta, i * ta.part, std::min<int64_t>(ta.n_att, (i + 1) * ta.part),
              s_.q_lat.data() + static_cast<size_t>(j) * HR_,
              s_.q_pe.data() + static_cast<size_t>(j) * H * c_.d_rope, H, i_thread, iu * H);
      if (ta.n_parts == 1) merge(j, iu);
    }
  }

  // Token j's parts from part buffer `first` on into o_lat row j.
  void merge(int32_t j, size_t first) const {
    const int32_t H = c_.n_heads;
    const auto R = static_cast<size_t>(c_.kv_lora_rank);
    cpu::mla_attn_merge(ta_[static_cast<size_t>(j)].n_parts, s_.part_m.data() + first * H,
                        s_.part_l.data() + first * H, s_.part_o.data() + first * H * R, H,
                        c_.kv_lora_rank, s_.o_lat.data() + static_cast<size_t>(j) * HR_);
  }

  // Tokens [j0, j1) whose parts, up to kMlaDecodeMaxParts, fill the part buffers in token
  // order (first_part set); returns j1 and the unit count.
  std::pair<int32_t, int32_t> next_group(int32_t j0) {
    int32_t units = 0, j1 = j0;
    for (; j1 < n_ && units + ta_[static_cast<size_t>(j1)].n_parts <= kMlaDecodeMaxParts; ++j1) {
      ta_[static_cast<size_t>(j1)].first_part = units;
      units += ta_[static_cast<size_t>(j1)].n_parts;
    }
    return {j1, units};
  }
  const TokenAttn& token(int32_t j) const { return ta_[static_cast<size_t>(j)]; }

 private:
  const MlaAttnArgs& a_;
  const MlaShape& c_;
  const int32_t* toks_;
  int32_t n_;
  CpuScratch& s_;
  bool bf16_;
  size_t HR_, n_scratch_, x_stride_;
  std::array<TokenAttn, kMlaAbsorbChunk> ta_;
};

}  // namespace

void CpuBackend::mla_decode(const MlaAttnArgs& a, const int32_t* toks, const int32_t* seqs,
                            int32_t n, BackendScratch& scratch) const {
  DecodeChunk d(a, toks, seqs, n, cpu_scratch(scratch), o_.bf16_attention);
  const int32_t H = a.shape.n_heads;
  // The heads in n_threads equal contiguous ranges (each head's product is a few KB, and guided
  // claims of 1-2 heads cost more than they balanced; docs/measurements.md).
  const int64_t n_ranges = pool_->n_threads();
  auto heads = [&](int64_t i) { return static_cast<int32_t>(H * i / n_ranges); };
  if (d.single_part() && n_ranges > 1) {
    // The token's one part would leave the other threads idle, so each thread takes a head range
    // through W_UK, the attention of its heads (mla_attn_partial's per-head arithmetic does not
    // depend on which heads a call covers) and W_UV, in one dispatch instead of three.
    // Bit-identical to the token-parts path (ForwardInvariants). Not for more tokens: the kernel
    // keeps heads in vector lanes padded to 16, so a thread scoring every token over a few heads
    // would do up to n times a token part's work.
    pool_->parallel_for(n_ranges, 1, [&](int64_t i0, int64_t i1, int32_t i_thread) {
      if (heads(i1) > heads(i0)) d.single_part_heads(heads(i0), heads(i1), i_thread);
    });
    return;
  }
  pool_->parallel_for(n_ranges, 1, [&](int64_t i0, int64_t i1, int32_t i_thread) {
    d.uk_heads(heads(i0), heads(i1), d.gather(i_thread));
  });
  // The parts of consecutive tokens, up to kMlaDecodeMaxParts in all, run in one dispatch (a
  // decode step's short-context tokens have one part each: one at a time they ran on the caller
  // alone); a one-part token is merged by the thread that ran it, the others after.
  for (int32_t j0 = 0; j0 < n;) {
    const auto [j1, units] = d.next_group(j0);
    pool_->parallel_for(units, 1, [&](int64_t u0, int64_t u1, int32_t i_thread) {
      d.token_parts(j0, u0, u1, i_thread);
    });
    for (int32_t j = j0; j < j1; ++j) {
      if (d.token(j).n_parts > 1) d.merge(j, static_cast<size_t>(d.token(j).first_part));
    }
    j0 = j1;
  }
  pool_->parallel_for(n_ranges, 1, [&](int64_t i0, int64_t i1, int32_t i_thread) {
    d.uv_heads(heads(i0), heads(i1), d.gather(i_thread));
  });
}

}  // namespace dss
