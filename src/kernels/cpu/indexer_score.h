// DeepSeek-V3.2 lightning-indexer scoring and top-k selection (docs/deepseek-reference.md 2.9):
// the hot loop of long-context decode, run over every cached key per layer per query token.
//
// index_scores: for i < n,
//   scores[i] = key_scales[i] * sum_{h<HI} coef[h] * max(0, dot(q[h*D .. h*D+D),
//                                                             e4m3_to_f32(keys[i*D .. i*D+D))))
//   keys: [n, D] e4m3fn bytes, contiguous (NaN codes not expected); key_scales: [n] f32;
//   q: [HI, D] f32; coef: [HI] f32 (any sign); scores: [n] f32. fp32 accumulation.
//   Preconditions: 1 <= HI, 1 <= D, HI * D <= kIndexMaxQ (the transposed queries live on the
//   stack), D <= kIndexMaxHeadDim. Single-threaded: callers split keys or tokens across threads.
//   Cost: HI * D multiply-adds per key; each key is decoded once and reused for every head.
//
// top_k_indices: the k (0 <= k <= n) indices with the highest scores, ties -> the lower index
//   first (the order `score[x] > score[y] || (score[x] == score[y] && x < y)`, -0 == +0), written
//   to out[0, k) in increasing index order. scratch: [n] int32, clobbered. O(n) expected
//   (selection on order-preserving integer keys, no sort). Scores must not be NaN.
#pragma once

#include <cstdint>

namespace dss::cpu {

inline constexpr int32_t kIndexMaxQ = 128 * 128;  // HI * D bound (671B: 64 * 128)
inline constexpr int32_t kIndexMaxHeadDim = 256;  // D bound

void index_scores(const uint8_t* keys, const float* key_scales, int64_t n, const float* q,
                  const float* coef, int32_t HI, int32_t D, float* scores);

void top_k_indices(const float* scores, int64_t n, int64_t k, int32_t* out, int32_t* scratch);

}  // namespace dss::cpu
