// DeepSeek-V3.2 lightning indexer (docs/deepseek-reference.md 2.9), as the official model.py
// computes it, per layer:
//   keys   kI = LayerNorm(wk x); half-split RoPE on its first d_rope values; Hadamard * D^-0.5;
//          act_quant (UE8M0, one block per key) -> e4m3 values + scale, written to the cache row;
//   query  qI = wq_b cq per head, the same RoPE/Hadamard/act_quant per head;
//          coef_h = weights_proj(x)_h * H^-0.5 * scale_q_h * D^-0.5;
//   score  I(t, s) = scale_k(s) * sum_h coef_h * relu(qI8_h . kI8(s)), for s <= t;
//   select the top min(index_topk, t + 1) positions (ties: lower position first). When every
//   position <= t is selected (t < index_topk) the selection is dense and not materialised.
#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "kernels/cpu/vec_ops.h"
#include "model/deepseek/fp8_sim.h"
#include "model/runtime/model.h"

namespace dss {

namespace {
inline int32_t slot_at(const ForwardBatch& b, int32_t i_seq, int32_t pos, int32_t page_size) {
  return b.page_table[static_cast<size_t>(i_seq * b.max_pages + pos / page_size)] * page_size +
         pos % page_size;
}
}  // namespace

void Model::indexer_keys(int32_t i_layer, const ForwardBatch& b, Workspace& ws) const {
  const ModelConfig& c = cfg_;
  const IndexerWeights& w = w_.layers[static_cast<size_t>(i_layer)].mla.indexer;
  const int32_t T = b.n_tokens(), HI = c.index_n_heads, D = c.index_head_dim,
                n_pairs = c.d_rope / 2;
  const int32_t off = c.kv_lora_rank + c.d_rope, d_row = off + D + 1;
  mm(w.wk, ws.xn.data(), T, ws.idx_k.data());
  mm(w.wq_b, ws.q_a.data(), T, ws.idx_q.data());  // q_a holds cq (after q_a_layernorm)
  mm(w.weights_proj, ws.xn.data(), T, ws.idx_w.data());
  const float w_scale = 1.0f / std::sqrt(static_cast<float>(HI));
  for (int32_t t = 0; t < T; ++t) {
    rope_.angles(b.positions[static_cast<size_t>(t)], ws.rope_cos.data(), ws.rope_sin.data());
    float* k = ws.idx_k.data() + static_cast<size_t>(t) * D;
    layer_norm(k, w.k_norm_w.data(), w.k_norm_b.data(), D, 1e-6f, k);
    rope_rotate_half_split(k, n_pairs, ws.rope_cos.data(), ws.rope_sin.data());
    hadamard_transform(k, D);
    float* row = ws.kv_new.data() + static_cast<size_t>(t) * d_row + off;
    row[D] = act_quant_ue8m0(k, D, row);
    for (int32_t h = 0; h < HI; ++h) {
      float* q = ws.idx_q.data() + (static_cast<size_t>(t) * HI + h) * D;
      rope_rotate_half_split(q, n_pairs, ws.rope_cos.data(), ws.rope_sin.data());
      hadamard_transform(q, D);
      const float sq = act_quant_ue8m0(q, D, q);
      float& coef = ws.idx_w[static_cast<size_t>(t) * HI + h];
      coef = coef * w_scale * sq * (1.0f / std::sqrt(static_cast<float>(D)));
    }
  }
}

void Model::indexer_select(int32_t i_layer, const ForwardBatch& b, int32_t i_seq, int32_t d_row,
                           Workspace& ws) const {
  const ModelConfig& c = cfg_;
  const int32_t HI = c.index_n_heads, D = c.index_head_dim, K = c.index_topk;
  const int32_t off = c.kv_lora_rank + c.d_rope;
  const auto S = static_cast<size_t>(ws.limits.max_kv_len);
  const int32_t t_begin = b.seq_token_begin[static_cast<size_t>(i_seq)];
  const int32_t t_end = b.seq_token_begin[static_cast<size_t>(i_seq) + 1];
  pool_->parallel_for(t_end - t_begin, 1, [&](int64_t i0, int64_t i1, int32_t i_thread) {
    float* score = ws.idx_scores.data() + static_cast<size_t>(i_thread) * S;
    int32_t* order = ws.idx_order.data() + static_cast<size_t>(i_thread) * S;
    for (int64_t i = i0; i < i1; ++i) {
      const auto t = static_cast<int32_t>(t_begin + i);
      const int32_t pos = b.positions[static_cast<size_t>(t)];
      if (pos + 1 <= K) {  // every causal position is selected: dense
        ws.n_sel[static_cast<size_t>(t)] = -1;
        continue;
      }
      const float* q = ws.idx_q.data() + static_cast<size_t>(t) * HI * D;
      const float* coef = ws.idx_w.data() + static_cast<size_t>(t) * HI;
      for (int32_t s = 0; s <= pos; ++s) {
        const float* k = ws.kv_rows.data() + static_cast<size_t>(s) * d_row + off;
        float acc = 0.0f;
        for (int32_t h = 0; h < HI; ++h) {
          acc += coef[h] * std::max(0.0f, cpu::dot(q + static_cast<size_t>(h) * D, k, D));
        }
        score[s] = acc * k[D];
        order[s] = s;
      }
      std::partial_sort(order, order + K, order + pos + 1, [&](int32_t x, int32_t y) {
        return score[x] > score[y] || (score[x] == score[y] && x < y);
      });
      int32_t* sel = ws.sel.data() + static_cast<size_t>(t) * K;
      std::copy(order, order + K, sel);
      std::sort(sel, sel + K);
      ws.n_sel[static_cast<size_t>(t)] = K;
    }
  });
  if (ws.trace != nullptr) {
    auto& layer = ws.trace->index_sel[static_cast<size_t>(i_layer)];
    for (int32_t t = t_begin; t < t_end; ++t) {
      const int32_t n = ws.n_sel[static_cast<size_t>(t)];
      const int32_t pos = b.positions[static_cast<size_t>(t)];
      if (n < 0) {
        layer.emplace_back(ws.iota.begin(), ws.iota.begin() + pos + 1);
      } else {
        layer.emplace_back(ws.sel.begin() + static_cast<ptrdiff_t>(t) * K,
                           ws.sel.begin() + static_cast<ptrdiff_t>(t) * K + n);
      }
    }
  }
}

}  // namespace dss
