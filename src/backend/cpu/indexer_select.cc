// CpuBackend::indexer_select: the V3.2 lightning indexer's scores over a sequence's cached keys
// and its top-k per token (docs/deepseek-reference.md 2.9):
//   score  I(t, s) = scale_k(s) * sum_h coef_h * relu(qI8_h . kI8(s)), for s <= t, read from the
//          cache's indexer storage (per page [D, page_size] e4m3 + [page_size] f32,
//          kv/kv_cache.h) page by page;
//   select the top min(index_topk, t + 1) positions (ties: lower position first). When every
//   position <= t is selected (t < index_topk) the selection is dense and not materialised.
#include <algorithm>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_scratch.h"
#include "base/check.h"
#include "kernels/cpu/indexer_score.h"

namespace dss {

namespace {

// One sequence's selections over layer i_layer's cached indexer keys.
class Selection {
 public:
  Selection(const IndexerSelectArgs& a, CpuScratch& s, ThreadPool& pool)
      : a(a),
        s(s),
        pool_(&pool),
        HI(a.n_heads),
        D(a.head_dim),
        K(a.topk),
        page_size(a.kv->layout().page_size),
        keys(a.kv->index_keys(a.i_layer)),
        key_scales(a.kv->index_scales(a.i_layer)),
        pages(a.batch->page_table.data() + static_cast<size_t>(a.i_seq) * a.batch->max_pages),
        S(static_cast<size_t>(s.limits.max_kv_len)) {
    DSS_CHECK(
        D <= cpu::kIndexMaxHeadDim && HI * D <= cpu::kIndexMaxQ && a.kv->layout().d_index == D,
        "index_n_heads ", HI, " x index_head_dim ", D);
  }

  // Scores of token t over positions [0, pos] into score[0, pos], page run by page run, for the
  // runs [r0, r1) (run j covers positions [j * page_size, (j + 1) * page_size)).
  void score_runs(int32_t t, int32_t pos, int64_t r0, int64_t r1, float* score) const {
    const float* q = a.q + static_cast<size_t>(t) * HI * D;
    const float* coef = a.coef + static_cast<size_t>(t) * HI;
    for (int64_t j = r0; j < r1; ++j) {
      const auto p0 = static_cast<int32_t>(j * page_size);
      const size_t slot0 = static_cast<size_t>(pages[j]) * page_size;
      const uint8_t* next =
          j + 1 < r1 ? keys + static_cast<size_t>(pages[j + 1]) * page_size * D : nullptr;
      cpu::index_scores(keys + slot0 * D, page_size, key_scales + slot0,
                        std::min(page_size, pos + 1 - p0), q, coef, HI, D, score + p0, next);
    }
  }

  void select_top(int32_t t, int32_t pos, const float* score, int32_t* scratch) const {
    cpu::top_k_indices(score, pos + 1, K, a.sel + static_cast<size_t>(t) * K, scratch);
    a.n_sel[static_cast<size_t>(t)] = K;
  }

  // Decode over P >= 2 threads, K <= n / 6: the page runs are scored by whichever thread claims
  // them (balanced), each claim also leaving a strided sample of its keys; the sample gives a
  // threshold tau (top_k_sample_threshold), each thread gathers the keys <= tau of a contiguous
  // share, and one exact selection among the candidates (in position order) gives the same set in
  // the same order as top_k_indices over all positions. When tau misjudges (fewer than K
  // candidates, or a share with a quarter of its keys or more) the selection falls back to
  // top_k_indices over the scores.
  void score_select_parallel(int32_t t, int32_t pos) const {
    const int64_t n = int64_t{pos} + 1, n_runs = pos / page_size + 1;
    const int32_t P = pool_->n_threads();
    DSS_CHECK(s.idx_counts.size() >= static_cast<size_t>(P), "workspace sized for ",
              s.idx_counts.size(), " threads, pool has ", P);
    const int64_t stride = std::max<int64_t>(1, n / 1024), n_sample = (n + stride - 1) / stride;
    float* score = s.idx_scores.data();
    auto* sample = reinterpret_cast<uint32_t*>(s.idx_scores.data() + S);  // [n_sample]
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
    auto* rows = reinterpret_cast<uint32_t*>(s.idx_order.data());
    int64_t* counts = s.idx_counts.data();  // [P]
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
      select_top(t, pos, score, s.idx_order.data());
      return;
    }
    // The candidates as one list in position order: keys in row 0, indices in idx_cand.
    int32_t* idx = s.idx_cand.data();  // [m <= n / 4]
    int64_t at = 0;
    for (int32_t p = 0; p < P; ++p) {
      const uint32_t* keys = rows + p * S;
      const auto* ids = reinterpret_cast<const int32_t*>(keys + cap);
      std::copy(ids, ids + counts[p], idx + at);
      if (p > 0) std::copy(keys, keys + counts[p], rows + at);
      at += counts[p];
    }
    cpu::top_k_from_candidates(rows, idx, m, K, a.sel + static_cast<size_t>(t) * K, rows + S);
    a.n_sel[static_cast<size_t>(t)] = K;
  }

  const IndexerSelectArgs& a;
  CpuScratch& s;
  ThreadPool* pool_;
  const int32_t HI, D, K, page_size;
  const uint8_t* keys;
  const float* key_scales;
  const PageId* pages;
  const size_t S;
};

}  // namespace

void CpuBackend::indexer_select(const IndexerSelectArgs& a, BackendScratch& scratch) const {
  CpuScratch& s = cpu_scratch(scratch);
  const Selection sel(a, s, *pool_);
  const ForwardBatch& b = *a.batch;
  const int32_t K = a.topk, page_size = sel.page_size;
  const size_t S = sel.S;
  const int32_t t_begin = b.seq_token_begin[static_cast<size_t>(a.i_seq)];
  const int32_t t_end = b.seq_token_begin[static_cast<size_t>(a.i_seq) + 1];
  if (t_end - t_begin >= pool_->n_threads()) {  // prefill: one thread per token
    pool_->parallel_for(t_end - t_begin, 1, [&](int64_t i0, int64_t i1, int32_t i_thread) {
      float* score = s.idx_scores.data() + static_cast<size_t>(i_thread) * S;
      int32_t* order = s.idx_order.data() + static_cast<size_t>(i_thread) * S;
      for (int64_t i = i0; i < i1; ++i) {
        const auto t = static_cast<int32_t>(t_begin + i);
        const int32_t pos = b.positions[static_cast<size_t>(t)];
        a.n_sel[static_cast<size_t>(t)] = -1;  // every causal position is selected: dense
        if (pos + 1 <= K) continue;
        sel.score_runs(t, pos, 0, pos / page_size + 1, score);
        sel.select_top(t, pos, score, order);
      }
    });
  } else {  // decode / short chunks: the page runs of each token split over the threads
    for (int32_t t = t_begin; t < t_end; ++t) {
      const int32_t pos = b.positions[static_cast<size_t>(t)];
      a.n_sel[static_cast<size_t>(t)] = -1;
      if (pos + 1 <= K) continue;
      if (pool_->n_threads() >= 2 && pos + 1 >= 6 * int64_t{K}) {
        sel.score_select_parallel(t, pos);
        continue;
      }
      pool_->parallel_for(pos / page_size + 1, 1, [&](int64_t r0, int64_t r1, int32_t) {
        sel.score_runs(t, pos, r0, r1, s.idx_scores.data());
      });
      sel.select_top(t, pos, s.idx_scores.data(), s.idx_order.data());
    }
  }
}

}  // namespace dss
