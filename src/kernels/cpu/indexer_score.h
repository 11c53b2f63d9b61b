// DeepSeek-V3.2 lightning-indexer scoring and top-k selection (docs/deepseek-reference.md 2.9):
// the hot loop of long-context decode, run over every cached key per layer per query token.
//
// index_scores: for i < n, with k_i[d] = e4m3_to_f32(keys_t[d * ld + i]),
//   scores[i] = key_scales[i] * sum_{h<HI} coef[h] * max(0, dot(q[h*D .. h*D+D), k_i))
//   keys_t: [D, ld] e4m3fn bytes, keys transposed (one page of the indexer cache, ld = page_size,
//   kv/kv_cache.h), n <= ld, nothing at or past keys_t[d * ld + n) is read; NaN codes not
//   expected. key_scales: [n] f32; q: [HI, D] f32; coef: [HI] f32 (any sign); scores: [n] f32.
//   fp32 accumulation, per key and head one FMA chain over d in order, heads added in order.
//   next_keys_t (optional): the [D, ld] keys the caller scores next (the next page); only
//   prefetched (a hint, never dereferenced), so its page's DRAM latency overlaps this call.
//   Preconditions: 1 <= HI, 1 <= D <= kIndexMaxHeadDim, HI * D <= kIndexMaxQ (a scaled copy of
//   q lives on the stack), 0 <= n <= ld, |q| < 2^15 (the copy is q * 2^112; the model's q are
//   e4m3 values, |q| <= 448). Products |q k| below 2^-118 would round as f32 subnormals (never
//   for e4m3 q and k, whose nonzero products are >= 2^-18). Single-threaded: callers split pages
//   or tokens across threads. Cost: HI * D multiply-adds per key; keys sit in vector lanes, each
//   decoded key vector feeds 8 heads.
//
// top_k_indices: the k (0 <= k <= n) indices with the highest scores, ties -> the lower index
//   first (the order `score[x] > score[y] || (score[x] == score[y] && x < y)`, -0 == +0), written
//   to out[0, k) in increasing index order. scratch: [n] int32, clobbered. O(n) (selection on
//   order-preserving integer keys: a histogram pass finds the k-th key's bucket, an exact
//   selection inside it; no sort, no branch on the data in the passes over all keys). Scores must
//   not be NaN.
//
// The pieces of top_k_indices' sampled path, for callers that split it over threads (the decode
// indexer: scores from all threads, candidates gathered per share, one exact selection):
//   top_k_key(score): the order-preserving key, reversed: key(a) < key(b) <=> a > b, with
//     key(-0) == key(+0). The selection's order is (key asc, index asc).
//   top_k_sample_threshold(sample_keys, n_sample, n, k): a key tau a little past the k / n
//     quantile of the sample (sample_keys is clobbered), so that about 1.25 k + 16 n / n_sample
//     of n keys are <= tau: usually >= k of them, and every one of the top k when there are.
//   top_k_gather(scores, n, base, tau, keys, idx, cap): the keys <= tau of scores[0, n) and
//     their indices base + i, in index order, into keys / idx [cap]; returns how many there are.
//     Only when that count is < cap are keys / idx [0, count) all of them (cap >= 1).
//   top_k_from_candidates(keys, idx, m, k, out, scratch): given m >= k candidates in index order
//     that include every key of the global top k (all keys < the k-th smallest and, for its
//     ties, the lowest indices), out[0, k) = the idx of the top k in index order - top_k_indices'
//     selection. scratch: [m] uint32.
#pragma once

#include <cstdint>

namespace dss::cpu {

inline constexpr int32_t kIndexMaxQ = 128 * 128;  // HI * D bound (671B: 64 * 128)
inline constexpr int32_t kIndexMaxHeadDim = 256;  // D bound (671B: 128)

void index_scores(const uint8_t* keys_t, int64_t ld, const float* key_scales, int64_t n,
                  const float* q, const float* coef, int32_t HI, int32_t D, float* scores,
                  const uint8_t* next_keys_t = nullptr);

void top_k_indices(const float* scores, int64_t n, int64_t k, int32_t* out, int32_t* scratch);

uint32_t top_k_key(float score);
uint32_t top_k_sample_threshold(uint32_t* sample_keys, int64_t n_sample, int64_t n, int64_t k);
int64_t top_k_gather(const float* scores, int64_t n, int64_t base, uint32_t tau, uint32_t* keys,
                     int32_t* idx, int64_t cap);
void top_k_from_candidates(const uint32_t* keys, const int32_t* idx, int64_t m, int64_t k,
                           int32_t* out, uint32_t* scratch);

}  // namespace dss::cpu
