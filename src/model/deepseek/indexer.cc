// DeepSeek-V3.2 lightning indexer (docs/deepseek-reference.md 2.9), as the official model.py
// computes it, per layer:
//   keys   kI = LayerNorm(wk x); half-split RoPE on its first d_rope values; Hadamard * D^-0.5;
//          act_quant (UE8M0, one block per key) -> e4m3 values + scale, written to the cache row;
//   query  qI = wq_b cq per head, the same RoPE/Hadamard/act_quant per head;
//          coef_h = weights_proj(x)_h * H^-0.5 * scale_q_h * D^-0.5;
//   score  I(t, s) = scale_k(s) * sum_h coef_h * relu(qI8_h . kI8(s)), for s <= t, read from the
//          cache's indexer storage (per page [D, page_size] e4m3 + [page_size] f32,
//          kv/kv_cache.h) page by page;
//   select the top min(index_topk, t + 1) positions (ties: lower position first). When every
//   position <= t is selected (t < index_topk) the selection is dense and not materialised.
#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "kernels/cpu/indexer_score.h"
#include "kernels/cpu/vec_ops.h"
#include "model/deepseek/fp8_sim.h"
#include "model/runtime/model.h"
#include "tensor/dtype.h"

namespace dss {

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

void Model::indexer_select(int32_t i_layer, const ForwardBatch& b, int32_t i_seq, const KvCache& kv,
                           Workspace& ws) const {
  const ModelConfig& c = cfg_;
  const int32_t HI = c.index_n_heads, D = c.index_head_dim, K = c.index_topk;
  const int32_t page_size = kv.layout().page_size;
  DSS_CHECK(D <= cpu::kIndexMaxHeadDim && HI * D <= cpu::kIndexMaxQ && kv.layout().d_index == D,
            "index_n_heads ", HI, " x index_head_dim ", D);
  const uint8_t* keys = kv.index_keys(i_layer);
  const float* key_scales = kv.index_scales(i_layer);
  const PageId* pages = b.page_table.data() + static_cast<size_t>(i_seq) * b.max_pages;
  const auto S = static_cast<size_t>(ws.limits.max_kv_len);
  const int32_t t_begin = b.seq_token_begin[static_cast<size_t>(i_seq)];
  const int32_t t_end = b.seq_token_begin[static_cast<size_t>(i_seq) + 1];
  // Scores of token t over positions [0, pos] into score[0, pos], page run by page run, for the
  // runs [r0, r1) (run j covers positions [j * page_size, (j + 1) * page_size)).
  auto score_runs = [&](int32_t t, int32_t pos, int64_t r0, int64_t r1, float* score) {
    const float* q = ws.idx_q.data() + static_cast<size_t>(t) * HI * D;
    const float* coef = ws.idx_w.data() + static_cast<size_t>(t) * HI;
    for (int64_t j = r0; j < r1; ++j) {
      const auto p0 = static_cast<int32_t>(j * page_size);
      const size_t slot0 = static_cast<size_t>(pages[j]) * page_size;
      const uint8_t* next =
          j + 1 < r1 ? keys + static_cast<size_t>(pages[j + 1]) * page_size * D : nullptr;
      cpu::index_scores(keys + slot0 * D, page_size, key_scales + slot0,
                        std::min(page_size, pos + 1 - p0), q, coef, HI, D, score + p0, next);
    }
  };
  auto select_top = [&](int32_t t, int32_t pos, const float* score, int32_t* scratch) {
    cpu::top_k_indices(score, pos + 1, K, ws.sel.data() + static_cast<size_t>(t) * K, scratch);
    ws.n_sel[static_cast<size_t>(t)] = K;
  };
  // Decode over P >= 2 threads, K <= n / 6: the page runs are scored by whichever thread claims
  // them (balanced), each claim also leaving a strided sample of its keys; the sample gives a
  // threshold tau (top_k_sample_threshold), each thread gathers the keys <= tau of a contiguous
  // share, and one exact selection among the candidates (in position order) gives the same set in
  // the same order as top_k_indices over all positions. When tau misjudges (fewer than K
  // candidates, or a share with a quarter of its keys or more) the selection falls back to
  // top_k_indices over the scores.
  auto score_select_parallel = [&](int32_t t, int32_t pos) {
    const int64_t n = int64_t{pos} + 1, n_runs = pos / page_size + 1;
    const int32_t P = pool_->n_threads();
    DSS_CHECK(ws.idx_counts.size() >= static_cast<size_t>(P), "workspace sized for ",
              ws.idx_counts.size(), " threads, pool has ", P);
    const int64_t stride = std::max<int64_t>(1, n / 1024), n_sample = (n + stride - 1) / stride;
    float* score = ws.idx_scores.data();
    auto* sample = reinterpret_cast<uint32_t*>(ws.idx_scores.data() + S);  // [n_sample]
    pool_->parallel_for(n_runs, 1, [&](int64_t r0, int64_t r1, int32_t) {
      score_runs(t, pos, r0, r1, score);
      const int64_t b = r0 * page_size, e = std::min(n, r1 * page_size);
      for (int64_t i = (b + stride - 1) / stride * stride; i < e; i += stride)
        sample[i / stride] = cpu::top_k_key(score[i]);
    });
    const uint32_t tau = cpu::top_k_sample_threshold(sample, n_sample, n, K);
    // Share p gathers positions [n p / P, n (p + 1) / P) into row p of idx_order: keys [cap],
    // then indices [cap] (cap: a quarter of a share, as top_k_indices' own sampled path).
    auto share = [&](int64_t p) { return std::pair<int64_t, int64_t>{n * p / P, n * (p + 1) / P}; };
    const int64_t cap = std::max<int64_t>(1, n / P / 4);
    auto* rows = reinterpret_cast<uint32_t*>(ws.idx_order.data());
    int64_t* counts = ws.idx_counts.data();  // [P]
    pool_->parallel_for(P, 1, [&](int64_t p0, int64_t p1, int32_t) {
      for (int64_t p = p0; p < p1; ++p) {
        const auto [b, e] = share(p);
        uint32_t* keys = rows + p * S;
        counts[p] = cpu::top_k_gather(score + b, e - b, b, tau, keys,
                                      reinterpret_cast<int32_t*>(keys + cap), cap);
      }
    });
    int64_t m = 0;
    bool fits = true;
    for (int32_t p = 0; p < P; ++p) {
      fits = fits && counts[p] < cap;
      m += counts[p];
    }
    if (!fits || m < K) {  // tau misjudged: the exact selection over every score
      select_top(t, pos, score, ws.idx_order.data());
      return;
    }
    // The candidates as one list in position order: keys in row 0, indices in idx_cand.
    int32_t* idx = ws.idx_cand.data();  // [m <= n / 4]
    int64_t at = 0;
    for (int32_t p = 0; p < P; ++p) {
      const uint32_t* keys = rows + p * S;
      const auto* ids = reinterpret_cast<const int32_t*>(keys + cap);
      std::copy(ids, ids + counts[p], idx + at);
      if (p > 0) std::copy(keys, keys + counts[p], rows + at);
      at += counts[p];
    }
    cpu::top_k_from_candidates(rows, idx, m, K, ws.sel.data() + static_cast<size_t>(t) * K,
                               rows + S);
    ws.n_sel[static_cast<size_t>(t)] = K;
  };
  if (t_end - t_begin >= pool_->n_threads()) {  // prefill: one thread per token
    pool_->parallel_for(t_end - t_begin, 1, [&](int64_t i0, int64_t i1, int32_t i_thread) {
      float* score = ws.idx_scores.data() + static_cast<size_t>(i_thread) * S;
      int32_t* order = ws.idx_order.data() + static_cast<size_t>(i_thread) * S;
      for (int64_t i = i0; i < i1; ++i) {
        const auto t = static_cast<int32_t>(t_begin + i);
        const int32_t pos = b.positions[static_cast<size_t>(t)];
        ws.n_sel[static_cast<size_t>(t)] = -1;  // every causal position is selected: dense
        if (pos + 1 <= K) continue;
        score_runs(t, pos, 0, pos / page_size + 1, score);
        select_top(t, pos, score, order);
      }
    });
  } else {  // decode / short chunks: the page runs of each token split over the threads
    for (int32_t t = t_begin; t < t_end; ++t) {
      const int32_t pos = b.positions[static_cast<size_t>(t)];
      ws.n_sel[static_cast<size_t>(t)] = -1;
      if (pos + 1 <= K) continue;
      if (pool_->n_threads() >= 2 && pos + 1 >= 6 * int64_t{K}) {
        score_select_parallel(t, pos);
        continue;
      }
      pool_->parallel_for(pos / page_size + 1, 1, [&](int64_t r0, int64_t r1, int32_t) {
        score_runs(t, pos, r0, r1, ws.idx_scores.data());
      });
      select_top(t, pos, ws.idx_scores.data(), ws.idx_order.data());
    }
  }
  if (ws.trace != nullptr) {
    auto& layer = ws.trace->index_sel[static_cast<size_t>(i_layer)];
    for (int32_t t = t_begin; t < t_end; ++t) {
      const int32_t n = ws.n_sel[static_cast<size_t>(t)];
      const int32_t pos = b.positions[static_cast<size_t>(t)];
      if (n < 0) {
        std::vector<int32_t> all(static_cast<size_t>(pos) + 1);
        for (int32_t p = 0; p <= pos; ++p) all[static_cast<size_t>(p)] = p;
        layer.push_back(std::move(all));
      } else {
        layer.emplace_back(ws.sel.begin() + static_cast<ptrdiff_t>(t) * K,
                           ws.sel.begin() + static_cast<ptrdiff_t>(t) * K + n);
      }
    }
  }
}

}  // namespace dss
