// Dispatch entry for kernels/cpu/indexer_score.h; the scoring body and top_k_gather are
// indexer_score-inl.h, compiled per target. The rest of the top-k selection is plain C++
// (integer keys, histogram selection).
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
HWY_EXPORT(TopKGather);

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
// The k-th smallest T of the n keys key_at(i) (1 <= k <= n) and how many of them are < T: the
// selection is every key < T, then the lowest-index keys == T until k. A histogram of
// (key - min) >> shift (at most 2^11 buckets, shift fitting the keys' range) finds the bucket
// holding the k-th key, and an exact selection among that bucket's keys (copied to scratch [n])
// finds T. Three passes without data-dependent branches: nth_element's partitioning branches on
// every comparison, which on scores mispredicts about every other time (~8 ns per key measured).
template <class KeyAt>
std::pair<uint32_t, int64_t> kth_smallest(int64_t n, int64_t k, KeyAt key_at, uint32_t* scratch) {
  DSS_DCHECK(k >= 1 && k <= n);
  uint32_t lo = ~0u, hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t x = key_at(i);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  constexpr int kMaxBits = 11;
  const int bits =
      std::clamp(static_cast<int>(std::bit_width(static_cast<uint64_t>(n))), 4, kMaxBits);
  const int shift = std::max(0, static_cast<int>(std::bit_width(hi - lo)) - bits);
  uint32_t hist[size_t{1} << kMaxBits];
  std::fill_n(hist, size_t{1} << bits, 0u);
  for (int64_t i = 0; i < n; ++i) ++hist[(key_at(i) - lo) >> shift];
  int64_t below = 0;
  uint32_t b = 0;
  while (below + hist[b] < k) below += hist[b++];
  int64_t c = 0;  // the bucket's keys, in place: c <= i
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t x = key_at(i);
    scratch[c] = x;
    c += ((x - lo) >> shift) == b ? 1 : 0;
  }
  const int64_t kk = k - below;  // 1 <= kk <= c
  std::nth_element(scratch, scratch + (kk - 1), scratch + c);
  const uint32_t t = scratch[kk - 1];
  return {t, below + std::count_if(scratch, scratch + (kk - 1), [t](uint32_t x) { return x < t; })};
}

// Writes out[0, k) = index_at(i) for the selected i < n (in i order), given kth_smallest's T and
// count below it over the same keys, key_at(i) the key of i. Branch-free: every index is stored
// to buf [n] (at j <= i) and the cursor advances when selected; then the k are copied to out.
template <class KeyAt, class IndexAt>
void write_selected(int64_t n, int64_t k, std::pair<uint32_t, int64_t> kth, KeyAt key_at,
                    IndexAt index_at, int32_t* buf, int32_t* out) {
  const uint32_t t = kth.first;
  int64_t n_ties = k - kth.second, j = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t key = key_at(i);
    const int64_t eq = key == t ? 1 : 0;
    const int64_t take = (key < t ? 1 : 0) | (eq & (n_ties > 0 ? 1 : 0));
    n_ties -= eq & take;
    buf[j] = index_at(i);
    j += take;
  }
  DSS_DCHECK(j == k);
  std::copy(buf, buf + k, out);
}

// The k-th smallest key over all n keys, then one pass in index order. scratch: [n].
void top_k_by_histogram(const float* scores, int64_t n, int64_t k, int32_t* out, int32_t* scratch) {
  const auto key_at = [scores](int64_t i) { return top_k_key(scores[i]); };
  const auto kth = kth_smallest(n, k, key_at, reinterpret_cast<uint32_t*>(scratch));
  write_selected(
      n, k, kth, key_at, [](int64_t i) { return static_cast<int32_t>(i); }, scratch, out);
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
  // The (r + 1)-th smallest; the sample is its own scratch (kth_smallest writes at j <= i).
  return kth_smallest(
             n_sample, r + 1, [sample_keys](int64_t i) { return sample_keys[i]; }, sample_keys)
      .first;
}

int64_t top_k_gather(const float* scores, int64_t n, int64_t base, uint32_t tau, uint32_t* keys,
                     int32_t* idx, int64_t cap) {
  DSS_CHECK(cap >= 1 && base >= 0 && base + n <= int64_t{INT32_MAX}, "cap=", cap, " base=", base,
            " n=", n);
  return HWY_DYNAMIC_DISPATCH(TopKGather)(scores, n, base, tau, keys, idx, cap);
}

void top_k_from_candidates(const uint32_t* keys, const int32_t* idx, int64_t m, int64_t k,
                           int32_t* out, uint32_t* scratch) {
  DSS_CHECK(k >= 1 && k <= m, "k=", k, " m=", m);
  const auto key_at = [keys](int64_t i) { return keys[i]; };
  const auto kth = kth_smallest(m, k, key_at, scratch);
  write_selected(
      m, k, kth, key_at, [idx](int64_t i) { return idx[i]; }, reinterpret_cast<int32_t*>(scratch),
      out);
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
  top_k_by_histogram(scores, n, k, out, scratch);
}

}  // namespace dss::cpu
#endif  // HWY_ONCE
