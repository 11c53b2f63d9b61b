// Dispatch entry for kernels/cpu/indexer_score.h; the scoring body is indexer_score-inl.h,
// compiled per target. top_k_indices is plain C++ (integer selection, no SIMD).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/indexer_score.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/indexer_score-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <bit>
#include <numeric>

#include "base/check.h"
#include "kernels/cpu/indexer_score.h"

namespace dss::cpu {

HWY_EXPORT(IndexScores);

void index_scores(const uint8_t* keys_t, int64_t ld, const float* key_scales, int64_t n,
                  const float* q, const float* coef, int32_t HI, int32_t D, float* scores,
                  const uint8_t* next_keys_t) {
  DSS_CHECK(HI >= 1 && D >= 1 && D <= kIndexMaxHeadDim && HI * D <= kIndexMaxQ && n <= ld,
            "HI=", HI, " D=", D, " n=", n, " ld=", ld);
  if (n <= 0) return;
  HWY_DYNAMIC_DISPATCH(IndexScores)(keys_t, ld, key_scales, n, q, coef, HI, D, scores, next_keys_t);
}

namespace {
// Order-preserving map of a non-NaN score to u32, reversed: a < b as keys <=> score a > score b,
// and -0 == +0 (x + 0.0f turns -0 into +0 under round-to-nearest).
inline uint32_t descending_key(float x) {
  const uint32_t b = std::bit_cast<uint32_t>(x + 0.0f);
  const uint32_t ascending = (b & 0x80000000u) != 0 ? ~b : (b | 0x80000000u);
  return ~ascending;
}
}  // namespace

void top_k_indices(const float* scores, int64_t n, int64_t k, int32_t* out, int32_t* scratch) {
  DSS_CHECK(k >= 0 && k <= n, "k=", k, " n=", n);
  if (k == 0) return;
  if (k == n) {
    std::iota(out, out + n, 0);
    return;
  }
  // The k-th smallest key T: exactly the keys < T are selected, then the lowest-index keys == T
  // until k are chosen - the set partial_sort with (score desc, index asc) picks.
  auto* u = reinterpret_cast<uint32_t*>(scratch);  // int32/uint32 may alias
  for (int64_t i = 0; i < n; ++i) u[i] = descending_key(scores[i]);
  std::nth_element(u, u + (k - 1), u + n);
  const uint32_t t = u[k - 1];
  const int64_t n_less = std::count_if(u, u + (k - 1), [t](uint32_t x) { return x < t; });
  int64_t n_ties = k - n_less, j = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t key = descending_key(scores[i]);
    if (key < t || (key == t && n_ties > 0)) {
      n_ties -= key == t ? 1 : 0;
      out[j++] = static_cast<int32_t>(i);
    }
  }
  DSS_DCHECK(j == k);
}

}  // namespace dss::cpu
#endif  // HWY_ONCE
