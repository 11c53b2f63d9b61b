// Multi-head Latent Attention (docs/deepseek-reference.md section 2.3), both forms:
//   naive    K/V expanded from the cached latent through kv_b ("MHA mode"), for prefill chunks;
//   absorbed W_UK folded into the query and W_UV applied after attention, attending directly
//            over the cached [kv_lora_rank latent ; d_rope key] rows ("MQA mode"), for decode.
// Both use softmax_scale = d_qk^-0.5 * mscale^2 and a causal mask offset by the cached length.
#include <algorithm>

#include "base/check.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/vec_ops.h"
#include "model/deepseek/fp8_sim.h"
#include "model/runtime/model.h"

namespace dss {

namespace {
// Cache slot of position `pos` of sequence `i_seq`.
inline int32_t slot_of(const ForwardBatch& b, int32_t i_seq, int32_t pos, int32_t page_size) {
  const PageId page = b.page_table[static_cast<size_t>(i_seq * b.max_pages + pos / page_size)];
  DSS_DCHECK(page != kNoPage, "no page for pos ", pos);
  return page * page_size + pos % page_size;
}
// The tokens [t_begin, t_end) of sequence i_seq and its kv length after this step.
struct SeqRange {
  int32_t t_begin, t_end, kv_len;
};
inline SeqRange seq_range(const ForwardBatch& b, int32_t i_seq) {
  return {b.seq_token_begin[static_cast<size_t>(i_seq)],
          b.seq_token_begin[static_cast<size_t>(i_seq) + 1],
          b.seq_kv_len[static_cast<size_t>(i_seq)]};
}

// Positions token t (at position pos) attends to: the V3.2 indexer's selection, or every
// position <= pos (ws.n_sel[t] < 0: dense). Sets n.
inline const int32_t* attended_positions(const Workspace& ws, int32_t t, int32_t pos, int32_t topk,
                                         int32_t& n) {
  const int32_t n_sel = ws.n_sel[static_cast<size_t>(t)];
  n = n_sel < 0 ? pos + 1 : n_sel;
  return n_sel < 0 ? ws.iota.data() : ws.sel.data() + static_cast<size_t>(t) * topk;
}
}  // namespace

void Model::mla(int32_t i_layer, const ForwardBatch& b, KvCache& kv, Workspace& ws,
                AttnPath path) const {
  const ModelConfig& c = cfg_;
  const MlaWeights& w = w_.layers[static_cast<size_t>(i_layer)].mla;
  const int32_t T = b.n_tokens(), H = c.n_heads, d_qk = c.d_qk(), R = c.kv_lora_rank;
  const int32_t n_pairs = c.d_rope / 2;
  // Projections for all tokens of the step.
  mm(w.q_a, ws.xn.data(), T, ws.q_a.data());
  for (int32_t t = 0; t < T; ++t) {
    float* qa = ws.q_a.data() + static_cast<size_t>(t) * c.q_lora_rank;
    cpu::rmsnorm(qa, w.q_a_norm, c.q_lora_rank, c.rms_eps, qa);
  }
  mm(w.q_b, ws.q_a.data(), T, ws.q.data());
  mm(w.kv_a, ws.xn.data(), T, ws.kv_a.data());
  // Normalise + rotate, write the cache rows, rotate the query rope parts.
  for (int32_t t = 0; t < T; ++t) {
    rope_.angles(b.positions[static_cast<size_t>(t)], ws.rope_cos.data(), ws.rope_sin.data());
    const float* kva = ws.kv_a.data() + static_cast<size_t>(t) * (R + c.d_rope);
    float* row = ws.kv_new.data() + static_cast<size_t>(t) * kv.layout().d_row();
    cpu::rmsnorm(kva, w.kv_a_norm, R, c.rms_eps, row);
    if (w.has_indexer) {  // V3.2 simulates an FP8 latent cache: e4m3 per 128 values, then back
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
  for (int32_t s = 0; s < b.n_seqs(); ++s) {
    const int32_t n_new =
        b.seq_token_begin[static_cast<size_t>(s) + 1] - b.seq_token_begin[static_cast<size_t>(s)];
    if (n_new == 0) continue;
    // The sequence's cache rows as f32 (converted from the storage dtype), [kv_len, d_row].
    const int32_t L = b.seq_kv_len[static_cast<size_t>(s)];
    DSS_CHECK(L <= ws.limits.max_kv_len, "kv_len ", L, " > workspace ", ws.limits.max_kv_len);
    for (int32_t p = 0; p < L; ++p) {
      kv.load(i_layer, slot_of(b, s, p, kv.layout().page_size),
              ws.kv_rows.data() + static_cast<size_t>(p) * d_row);
    }
    if (w.has_indexer) indexer_select(i_layer, b, s, d_row, ws);
    const bool naive = path == AttnPath::kNaive || (path == AttnPath::kAuto && n_new > 1);
    if (naive) {
      mla_naive(i_layer, b, s, kv, ws);
    } else {
      mla_absorbed(i_layer, b, s, kv, ws);
    }
  }
  mm(w.o, ws.attn.data(), T, ws.tmp.data());
}

void Model::mla_naive(int32_t i_layer, const ForwardBatch& b, int32_t i_seq, const KvCache& kv,
                      Workspace& ws) const {
  const ModelConfig& c = cfg_;
  const MlaWeights& w = w_.layers[static_cast<size_t>(i_layer)].mla;
  const int32_t H = c.n_heads, d_qk = c.d_qk(), R = c.kv_lora_rank, d_kv = c.d_nope + c.d_v;
  const int32_t d_row = kv.layout().d_row();
  const auto [t_begin, t_end, L] = seq_range(b, i_seq);  // L <= max_kv_len: checked in mla()
  // Expand K_nope and V for every cached position: [L, H * (d_nope + d_v)].
  for (int32_t p = 0; p < L; ++p) {
    const float* row = ws.kv_rows.data() + static_cast<size_t>(p) * kv.layout().d_row();
    std::copy(row, row + R, ws.lat.data() + static_cast<size_t>(p) * R);
  }
  mm(w.kv_b, ws.lat.data(), L, ws.kv_exp.data());
  const float scale = c.softmax_scale();
  const int32_t p0 = L - (t_end - t_begin);
  const size_t S = static_cast<size_t>(ws.limits.max_kv_len);
  pool_->parallel_for(H, 1, [&](int64_t h0, int64_t h1, int32_t i_thread) {
    for (int32_t t = t_begin; t < t_end; ++t) {
      const int32_t pos = p0 + (t - t_begin);
      DSS_DCHECK(pos == b.positions[static_cast<size_t>(t)], "position mismatch");
      for (auto h = static_cast<int32_t>(h0); h < h1; ++h) {
        const float* q = ws.q.data() + (static_cast<size_t>(t) * H + h) * d_qk;
        float* sc = ws.scores.data() + static_cast<size_t>(i_thread) * S;
        int32_t n_ps = 0;
        const int32_t* ps = attended_positions(ws, t, pos, c.index_topk, n_ps);
        for (int32_t i = 0; i < n_ps; ++i) {
          const int32_t p = ps[i];
          const float* k_nope = ws.kv_exp.data() + (static_cast<size_t>(p) * H + h) * d_kv;
          const float* k_pe = ws.kv_rows.data() + static_cast<size_t>(p) * d_row + R;
          sc[i] = scale * (cpu::dot(q, k_nope, c.d_nope) + cpu::dot(q + c.d_nope, k_pe, c.d_rope));
        }
        cpu::softmax(sc, n_ps);
        float* o = ws.attn.data() + (static_cast<size_t>(t) * H + h) * c.d_v;
        std::fill(o, o + c.d_v, 0.0f);
        for (int32_t i = 0; i < n_ps; ++i) {
          cpu::axpy(sc[i],
                    ws.kv_exp.data() + (static_cast<size_t>(ps[i]) * H + h) * d_kv + c.d_nope, o,
                    c.d_v);
        }
      }
    }
  });
}

void Model::mla_absorbed(int32_t i_layer, const ForwardBatch& b, int32_t i_seq, const KvCache& kv,
                         Workspace& ws) const {
  const ModelConfig& c = cfg_;
  const MlaWeights& w = w_.layers[static_cast<size_t>(i_layer)].mla;
  const int32_t H = c.n_heads, d_qk = c.d_qk(), R = c.kv_lora_rank, d_kv = c.d_nope + c.d_v;
  const int32_t d_row = kv.layout().d_row();
  const auto [t_begin, t_end, L] = seq_range(b, i_seq);  // L <= max_kv_len: checked in mla()
  const float scale = c.softmax_scale();
  const int32_t p0 = L - (t_end - t_begin);
  const size_t S = static_cast<size_t>(ws.limits.max_kv_len);
  pool_->parallel_for(H, 1, [&](int64_t h0, int64_t h1, int32_t i_thread) {
    float* q_abs = ws.q_abs.data() + static_cast<size_t>(i_thread) * R;
    float* o_lat = ws.o_lat.data() + static_cast<size_t>(i_thread) * R;
    for (int32_t t = t_begin; t < t_end; ++t) {
      const int32_t pos = p0 + (t - t_begin);
      for (auto h = static_cast<int32_t>(h0); h < h1; ++h) {
        const float* q = ws.q.data() + (static_cast<size_t>(t) * H + h) * d_qk;
        const float* w_head = w.kv_b_f32.data() + static_cast<size_t>(h) * d_kv * R;  // [d_kv, R]
        // q_abs = W_UK_h^T q_nope  (R)
        std::fill(q_abs, q_abs + R, 0.0f);
        for (int32_t j = 0; j < c.d_nope; ++j)
          cpu::axpy(q[j], w_head + static_cast<size_t>(j) * R, q_abs, R);
        float* sc = ws.scores.data() + static_cast<size_t>(i_thread) * S;
        int32_t n_ps = 0;
        const int32_t* ps = attended_positions(ws, t, pos, c.index_topk, n_ps);
        for (int32_t i = 0; i < n_ps; ++i) {
          const float* row = ws.kv_rows.data() + static_cast<size_t>(ps[i]) * d_row;
          sc[i] = scale * (cpu::dot(q_abs, row, R) + cpu::dot(q + c.d_nope, row + R, c.d_rope));
        }
        cpu::softmax(sc, n_ps);
        std::fill(o_lat, o_lat + R, 0.0f);
        for (int32_t i = 0; i < n_ps; ++i)
          cpu::axpy(sc[i], ws.kv_rows.data() + static_cast<size_t>(ps[i]) * d_row, o_lat, R);
        // o_h = W_UV_h o_lat  (d_v)
        float* o = ws.attn.data() + (static_cast<size_t>(t) * H + h) * c.d_v;
        for (int32_t j = 0; j < c.d_v; ++j)
          o[j] = cpu::dot(w_head + static_cast<size_t>(c.d_nope + j) * R, o_lat, R);
      }
    }
  });
}

}  // namespace dss
