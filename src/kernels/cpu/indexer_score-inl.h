// Per-target body of kernels/cpu/indexer_score.h. Included once per Highway target
// (foreach_target).
//
// Keys in vector lanes. The cache stores each page's indexer keys transposed ([D, ld]: the
// values of dimension d of consecutive keys are adjacent bytes), so one load gives dimension d
// of Lanes consecutive keys:
//   - decode: the code sign-extended to i32, shifted left by 20 and masked with 0x87F00000 is the
//     f32 of value * 2^-120 (sign, exponent and mantissa fields moved into place; subnormal codes
//     land exactly on f32 subnormals): 3 integer ops per vector, no conversion instruction;
//   - the query is copied once per call scaled by 2^112 (exact), so every product is
//     q * k * 2^-8 and the accumulators stay far from the f32 subnormal range;
//   - a register tile of kH heads (8 on every target: 8 accumulators) accumulates
//     acc[h] += broadcast(qs[h, d]) * decode(keys_t[d, keys]) over d, so each decoded key vector
//     feeds kH FMAs;
//   - epilogue, vectorised over keys: sums += coef[h] * max(0, acc[h]) in head order, then
//     scores = sums * key_scale * 2^8. No horizontal reductions anywhere;
//   - a partial last vector (n % Lanes keys) is copied into a zero-padded stack block first, so
//     no byte past keys_t[d * ld + n) is read.
// Per key the arithmetic is: for each head an FMA chain over d = 0..D-1, then the heads' terms
// added in head order, then one multiply by key_scale * 2^8: the same for every target, tile and
// call split.
#if defined(DSS_KERNELS_CPU_INDEXER_SCORE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DSS_KERNELS_CPU_INDEXER_SCORE_INL_H_
#undef DSS_KERNELS_CPU_INDEXER_SCORE_INL_H_
#else
#define DSS_KERNELS_CPU_INDEXER_SCORE_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/cpu/hwy_util-inl.h"
#include "kernels/cpu/indexer_score.h"
#include "tensor/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One tile: heads [0, kH) of qs / coef (offset to the tile's first head) x one key vector at
// keys_t (stride ld between dimensions); sums [Lanes] += coef[h] * max(0, acc[h]), heads in order.
template <int kH, class DF>
HWY_INLINE void ScoreTile(DF df, const uint8_t* HWY_RESTRICT keys_t, int64_t ld,
                          const float* HWY_RESTRICT qs, const float* HWY_RESTRICT coef, int32_t D,
                          hn::Vec<DF>& sums) {
  hn::Vec<DF> acc[kH];
  for (int h = 0; h < kH; ++h) acc[h] = hn::Zero(df);
  for (int32_t d = 0; d < D; ++d) {
    const auto kv = DecodeE4m3Shifted(df, keys_t + static_cast<int64_t>(d) * ld);
    for (int h = 0; h < kH; ++h)
      acc[h] = hn::MulAdd(hn::Set(df, qs[static_cast<int64_t>(h) * D + d]), kv, acc[h]);
  }
  const auto zero = hn::Zero(df);
  for (int h = 0; h < kH; ++h) sums = hn::MulAdd(hn::Set(df, coef[h]), hn::Max(acc[h], zero), sums);
}

// scores[0, n_keys) (n_keys <= Lanes) of the key vector at keys_t: head tiles of 8, 4, 2, 1 in
// head order, then the key scales.
template <class DF>
HWY_INLINE void ScoreKeyVector(DF df, const uint8_t* HWY_RESTRICT keys_t, int64_t ld,
                               const float* HWY_RESTRICT key_scales, int64_t n_keys,
                               const float* HWY_RESTRICT qs, const float* HWY_RESTRICT coef,
                               int32_t HI, int32_t D, float* HWY_RESTRICT scores) {
  auto sums = hn::Zero(df);
  int32_t h = 0;
  const int64_t D64 = D;
  for (; h + 8 <= HI; h += 8) ScoreTile<8>(df, keys_t, ld, qs + h * D64, coef + h, D, sums);
  for (; h + 4 <= HI; h += 4) ScoreTile<4>(df, keys_t, ld, qs + h * D64, coef + h, D, sums);
  for (; h + 2 <= HI; h += 2) ScoreTile<2>(df, keys_t, ld, qs + h * D64, coef + h, D, sums);
  for (; h < HI; ++h) ScoreTile<1>(df, keys_t, ld, qs + h * D64, coef + h, D, sums);
  const auto v256 = hn::Set(df, 256.0f);  // undoes 2^-120 (keys) * 2^112 (query)
  if (n_keys == static_cast<int64_t>(hn::Lanes(df))) {
    hn::StoreU(hn::Mul(sums, hn::Mul(hn::LoadU(df, key_scales), v256)), df, scores);
  } else {
    HWY_ALIGN float s[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(sums, df, s);
    for (int64_t i = 0; i < n_keys; ++i) scores[i] = s[i] * (key_scales[i] * 256.0f);
  }
}

inline void IndexScores(const uint8_t* HWY_RESTRICT keys_t, int64_t ld,
                        const float* HWY_RESTRICT key_scales, int64_t n,
                        const float* HWY_RESTRICT q, const float* HWY_RESTRICT coef, int32_t HI,
                        int32_t D, float* HWY_RESTRICT scores,
                        const uint8_t* next_keys_t = nullptr) {
  const hn::ScalableTag<float> df;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  HWY_ALIGN float qs[kIndexMaxQ];  // q * 2^112
  for (int64_t i = 0; i < int64_t{HI} * D; ++i) qs[i] = q[i] * 5.192296858534828e33f;
  // The next page's D * ld bytes are prefetched in equal slices, one per key vector scored here
  // (the whole page when this call has fewer than one full vector).
  const int64_t next_bytes = next_keys_t != nullptr ? int64_t{D} * ld : 0;
  const int64_t n_vec = std::max<int64_t>(1, n / N);
  int64_t slice = (next_bytes + n_vec - 1) / n_vec;
  int64_t pf = 0;
  auto prefetch_slice = [&] {
    for (const int64_t end = std::min(next_bytes, pf + slice); pf < end; pf += 64)
      hwy::Prefetch(next_keys_t + pf);
  };
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    prefetch_slice();
    ScoreKeyVector(df, keys_t + i, ld, key_scales + i, N, qs, coef, HI, D, scores + i);
  }
  slice = next_bytes;  // all that is left (no full vector ran)
  prefetch_slice();
  if (i < n) {  // n - i < N keys: a zero-padded [D, N] copy
    HWY_ALIGN uint8_t tail[kIndexMaxHeadDim * HWY_MAX_BYTES / sizeof(float)];
    const int64_t rem = n - i;
    for (int32_t d = 0; d < D; ++d) {
      for (int64_t k = 0; k < N; ++k)
        tail[d * N + k] = k < rem ? keys_t[static_cast<int64_t>(d) * ld + i + k] : uint8_t{0};
    }
    ScoreKeyVector(df, tail, N, key_scales + i, rem, qs, coef, HI, D, scores + i);
  }
}

// top_k_gather (indexer_score.h): the keys <= tau of scores[0, n) and their indices base + i.
// Keys and the selection mask a vector at a time, then every lane stored at the cursor, which
// advances by the lane's mask bit (no branch on the data; Highway 1.0's AVX2 Compress copies a
// 1 KiB table to the stack per call, ~5x slower than this); while a whole vector still fits
// below cap, then one key at a time with the store clamped to cap - 1 and the count always
// advanced, so the count returned is exact and nothing at or past keys / idx [cap) is written.
// Precondition: base + n <= INT32_MAX.
inline int64_t TopKGather(const float* HWY_RESTRICT scores, int64_t n, int64_t base, uint32_t tau,
                          uint32_t* HWY_RESTRICT keys, int32_t* HWY_RESTRICT idx, int64_t cap) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::RebindToSigned<decltype(df)> di;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  const auto vtau = hn::Set(du, tau);
  const auto sign = hn::Set(du, 0x80000000u);
  const auto zero = hn::Zero(df);
  HWY_ALIGN uint32_t lane_key[HWY_MAX_BYTES / sizeof(uint32_t)];
  int64_t m = 0, i = 0;
  for (; i + N <= n && m + N <= cap; i += N) {
    // top_k_key: the f32 bits (-0 made +0) with negatives inverted, then all bits inverted.
    const auto b = hn::BitCast(du, hn::Add(hn::LoadU(df, scores + i), zero));
    const auto flip = hn::Or(hn::BitCast(du, hn::ShiftRight<31>(hn::BitCast(di, b))), sign);
    const auto key = hn::Not(hn::Xor(b, flip));
    hn::Store(key, du, lane_key);
    uint8_t mask_bytes[8] = {};  // one bit per lane, lane 0 lowest (N <= 64)
    hn::StoreMaskBits(du, hn::Not(hn::Gt(key, vtau)), mask_bytes);
    uint64_t bits;
    std::memcpy(&bits, mask_bytes, sizeof(bits));
    for (int64_t l = 0; l < N; ++l) {
      keys[m] = lane_key[l];
      idx[m] = static_cast<int32_t>(base + i + l);
      m += static_cast<int64_t>((bits >> l) & 1u);
    }
  }
  for (; i < n; ++i) {
    const uint32_t key = top_k_key(scores[i]);
    const int64_t at = std::min(m, cap - 1);
    keys[at] = key;
    idx[at] = static_cast<int32_t>(base + i);
    m += key <= tau ? 1 : 0;
  }
  return m;
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_KERNELS_CPU_INDEXER_SCORE_INL_H_
