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
#include <utility>

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

uint32_t top_k_key(float score) {
  const uint32_t b = std::bit_cast<uint32_t>(score + 0.0f);
  // negative: ~b, positive: b | 2^31, without a branch (the selection loops are branch-free)
  const uint32_t flip = static_cast<uint32_t>(static_cast<int32_t>(b) >> 31) | 0x80000000u;
  return ~(b ^ flip);
}

namespace {
// The k-th smallest key T of keys[0, n) (reordered by nth_element; 1 <= k <= n) and how many of
// the k smallest are < T: the selection is every key < T, then the lowest-index keys == T until k.
std::pair<uint32_t, int64_t> kth_smallest(uint32_t* keys, int64_t n, int64_t k) {
  std::nth_element(keys, keys + (k - 1), keys + n);
  const uint32_t t = keys[k - 1];
  return {t, std::count_if(keys, keys + (k - 1), [t](uint32_t x) { return x < t; })};
}

// Writes out[0, k) = index_at(i) for the selected i < n (in i order), given kth_smallest's T and
// count below it over the same keys, key_at(i) the key of i.
template <class KeyAt, class IndexAt>
void write_selected(int64_t n, int64_t k, std::pair<uint32_t, int64_t> kth, KeyAt key_at,
                    IndexAt index_at, int32_t* out) {
  const uint32_t t = kth.first;
  int64_t n_ties = k - kth.second, j = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t key = key_at(i);
    if (key < t || (key == t && n_ties > 0)) {
      n_ties -= key == t ? 1 : 0;
      out[j++] = index_at(i);
    }
  }
  DSS_DCHECK(j == k);
}

// Every key's rank by std::nth_element over all n keys, then one pass in index order.
void top_k_by_nth_element(const float* scores, int64_t n, int64_t k, int32_t* out, uint32_t* keys) {
  for (int64_t i = 0; i < n; ++i) keys[i] = top_k_key(scores[i]);
  write_selected(
      n, k, kth_smallest(keys, n, k), [scores](int64_t i) { return top_k_key(scores[i]); },
      [](int64_t i) { return static_cast<int32_t>(i); }, out);
}

// The same selection for k << n: a threshold from a strided sample of the keys, one gathering
// pass, the exact selection among the candidates. Returns false (out untouched) when the threshold
// turned out too low (fewer than k candidates) or too high (n / 4 or more).
bool top_k_by_sample(const float* scores, int64_t n, int64_t k, int32_t* out, uint32_t* scratch) {
  constexpr int64_t kSample = 1024;
  uint32_t sample[kSample];
  for (int64_t j = 0; j < kSample; ++j) sample[j] = top_k_key(scores[j * n / kSample]);
  const uint32_t tau = top_k_sample_threshold(sample, kSample, n, k);
  const int64_t cap = n / 4;
  uint32_t* cand_key = scratch;                                // [cap]
  auto* cand_idx = reinterpret_cast<int32_t*>(scratch + cap);  // [cap]
  const int64_t m = top_k_gather(scores, n, 0, tau, cand_key, cand_idx, cap);
  if (m < k || m >= cap) return false;
  top_k_from_candidates(cand_key, cand_idx, m, k, out, scratch + 2 * cap);  // [cap] more
  return true;
}

}  // namespace

uint32_t top_k_sample_threshold(uint32_t* sample_keys, int64_t n_sample, int64_t n, int64_t k) {
  DSS_CHECK(n_sample >= 1 && n >= 1 && k >= 0 && k <= n, "n_sample=", n_sample, " n=", n, " k=", k);
  const int64_t r = std::min(n_sample - 1, (k * n_sample * 5 / 4) / n + 16);
  std::nth_element(sample_keys, sample_keys + r, sample_keys + n_sample);
  return sample_keys[r];
}

int64_t top_k_gather(const float* scores, int64_t n, int64_t base, uint32_t tau, uint32_t* keys,
                     int32_t* idx, int64_t cap) {
  DSS_CHECK(cap >= 1, "cap=", cap);
  int64_t m = 0;
  for (int64_t i = 0; i < n; ++i) {  // branch-free: always store, advance when selected
    const uint32_t key = top_k_key(scores[i]);
    const int64_t at = std::min(m, cap - 1);
    keys[at] = key;
    idx[at] = static_cast<int32_t>(base + i);
    m += key <= tau ? 1 : 0;
  }
  return m;
}

void top_k_from_candidates(const uint32_t* keys, const int32_t* idx, int64_t m, int64_t k,
                           int32_t* out, uint32_t* scratch) {
  DSS_CHECK(k >= 1 && k <= m, "k=", k, " m=", m);
  std::copy(keys, keys + m, scratch);  // a copy to select on; keys keeps the order
  write_selected(
      m, k, kth_smallest(scratch, m, k), [keys](int64_t i) { return keys[i]; },
      [idx](int64_t i) { return idx[i]; }, out);
}

void top_k_indices(const float* scores, int64_t n, int64_t k, int32_t* out, int32_t* scratch) {
  DSS_CHECK(k >= 0 && k <= n, "k=", k, " n=", n);
  if (k == 0) return;
  if (k == n) {
    std::iota(out, out + n, 0);
    return;
  }
  // The k-th smallest key T: exactly the keys < T are selected, then the lowest-index keys == T
  // until k are chosen - the set partial_sort with (score desc, index asc) picks.
  auto* keys = reinterpret_cast<uint32_t*>(scratch);  // int32/uint32 may alias
  if (n >= 4096 && 6 * k <= n && top_k_by_sample(scores, n, k, out, keys)) return;
  top_k_by_nth_element(scores, n, k, out, keys);
}

}  // namespace dss::cpu
#endif  // HWY_ONCE
