// Per-target body of kernels/cpu/indexer_score.h. Included once per Highway target
// (foreach_target).
//
// Layout of the work (a small GEMM S[i, h] = K[i, :] . Q[h, :] with a fused epilogue):
//   - the queries are transposed once per call into panels (stack): one per register tile of
//     heads, [D, width] contiguous, so the kH head vectors at dimension d are adjacent loads and
//     a tile streams its panel sequentially;
//   - keys are processed kK at a time: each key's D codes are decoded to f32 once into an L1
//     scratch kf [kK, D] (scaled by 2^-8, see DecodeE4m3F16 in hwy_util-inl.h);
//   - a register tile of kH head vectors x kK keys accumulates acc[v, k] += qt[d, heads v] *
//     broadcast(kf[k, d]) over d: 12 accumulators, every FMA on a register, no reductions
//     inside the loop;
//   - epilogue per key: sum_v coef[heads v] * max(0, acc[v, k]) as a vector over heads, one
//     horizontal sum per key, times key_scales[i] * 2^8.
// Heads are vectorised, so the tag is chosen with HI % Lanes == 0 (HI = 8 on a 16-lane target
// runs 8-lane vectors).
#if defined(DSS_KERNELS_CPU_INDEXER_SCORE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DSS_KERNELS_CPU_INDEXER_SCORE_INL_H_
#undef DSS_KERNELS_CPU_INDEXER_SCORE_INL_H_
#else
#define DSS_KERNELS_CPU_INDEXER_SCORE_INL_H_
#endif

#include <algorithm>
#include <cstdint>

#include "hwy/highway.h"
#include "kernels/cpu/hwy_util-inl.h"
#include "kernels/cpu/indexer_score.h"
#include "tensor/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Keys [i0, i0 + n_keys) -> kf [kK, D] f32 (value * 2^-8); rows n_keys..kK-1 are zero.
template <class DF>
HWY_INLINE void DecodeKeys(DF df, const uint8_t* HWY_RESTRICT keys, int64_t n_keys, int32_t kK,
                           int32_t D, float* HWY_RESTRICT kf) {
  const int32_t N = static_cast<int32_t>(hn::Lanes(df));
  for (int32_t k = 0; k < kK; ++k) {
    float* HWY_RESTRICT row = kf + static_cast<int64_t>(k) * D;
    if (k >= n_keys) {
      std::fill(row, row + D, 0.0f);
      continue;
    }
    const uint8_t* HWY_RESTRICT src = keys + static_cast<int64_t>(k) * D;
    int32_t d = 0;
    for (; d + N <= D; d += N) hn::StoreU(DecodeE4m3F16(df, src + d), df, row + d);
    for (; d < D; ++d) row[d] = fp8e4m3_to_f32(src[d]) * (1.0f / 256.0f);
  }
}

// One tile: kH head vectors (panel qp [D, kH * Lanes], coef + h0) x kK decoded keys.
// sums [kK, Lanes] += coef * max(0, dot) per key, as vectors over heads.
// kD > 0: D == kD known at compile time (the decoded rows' stride becomes an immediate offset).
template <int kH, int kK, int kD, class DF>
HWY_INLINE void ScoreTile(DF df, const float* HWY_RESTRICT qp, int32_t d_runtime,
                          const float* HWY_RESTRICT kf, const float* HWY_RESTRICT coef,
                          float* HWY_RESTRICT sums) {
  const size_t N = hn::Lanes(df);
  const int32_t D = kD > 0 ? kD : d_runtime;
  hn::Vec<DF> acc[kH * kK];
  for (int j = 0; j < kH * kK; ++j) acc[j] = hn::Zero(df);
  for (int32_t d = 0; d < D; ++d) {
    const float* HWY_RESTRICT qrow = qp + static_cast<int64_t>(d) * kH * N;
    hn::Vec<DF> qv[kH];
    for (int v = 0; v < kH; ++v) qv[v] = hn::LoadU(df, qrow + v * N);
    for (int k = 0; k < kK; ++k) {
      const auto kb = hn::Set(df, kf[static_cast<int64_t>(k) * D + d]);
      for (int v = 0; v < kH; ++v) acc[v * kK + k] = hn::MulAdd(qv[v], kb, acc[v * kK + k]);
    }
  }
  const auto zero = hn::Zero(df);
  for (int k = 0; k < kK; ++k) {
    auto s = hn::LoadU(df, sums + k * N);
    for (int v = 0; v < kH; ++v)
      s = hn::MulAdd(hn::LoadU(df, coef + v * N), hn::Max(acc[v * kK + k], zero), s);
    hn::StoreU(s, df, sums + k * N);
  }
}

// All head vectors for one block of kK keys, in tiles of up to 4 (kK * kH <= 12 accumulators).
template <int kK, int kD, class DF>
HWY_INLINE void ScoreKeyBlock(DF df, const float* HWY_RESTRICT qt, const float* HWY_RESTRICT coef,
                              int32_t HI, int32_t D, const float* HWY_RESTRICT kf,
                              float* HWY_RESTRICT sums) {
  const int32_t N = static_cast<int32_t>(hn::Lanes(df));
  const int32_t HV = HI / N;
  const int64_t panel = static_cast<int64_t>(D) * N;  // floats per head vector in a panel
  int32_t v = 0;
  if constexpr (kK <= 3) {
    for (; v + 4 <= HV; v += 4) ScoreTile<4, kK, kD>(df, qt + v * panel, D, kf, coef + v * N, sums);
  }
  if constexpr (kK <= 6) {
    for (; v + 2 <= HV; v += 2) ScoreTile<2, kK, kD>(df, qt + v * panel, D, kf, coef + v * N, sums);
  }
  for (; v < HV; ++v) ScoreTile<1, kK, kD>(df, qt + v * panel, D, kf, coef + v * N, sums);
}

// q [HI, D] -> the panels ScoreKeyBlock<kK> walks: the tiles' head-vector ranges in order, each
// [D, kH * N] row-major (head vector v's panel starts at v * D * N).
template <int kK>
void PackQueryPanels(const float* HWY_RESTRICT q, int32_t HI, int32_t D, int32_t N,
                     float* HWY_RESTRICT qt) {
  const int32_t HV = HI / N;
  int32_t v = 0;
  auto pack = [&](int32_t kH) {
    const int32_t w = kH * N;
    float* HWY_RESTRICT dst = qt + static_cast<int64_t>(v) * D * N;
    for (int32_t d = 0; d < D; ++d) {
      for (int32_t j = 0; j < w; ++j)
        dst[static_cast<int64_t>(d) * w + j] = q[static_cast<int64_t>(v * N + j) * D + d];
    }
    v += kH;
  };
  if constexpr (kK <= 3) {
    while (v + 4 <= HV) pack(4);
  }
  if constexpr (kK <= 6) {
    while (v + 2 <= HV) pack(2);
  }
  while (v < HV) pack(1);
}

template <int kK, int kD, class DF>
void IndexScoresT(DF df, const uint8_t* HWY_RESTRICT keys, const float* HWY_RESTRICT key_scales,
                  int64_t n, const float* HWY_RESTRICT q, const float* HWY_RESTRICT coef,
                  int32_t HI, int32_t D, float* HWY_RESTRICT scores) {
  const size_t N = hn::Lanes(df);
  HWY_ALIGN float qt[kIndexMaxQ];
  PackQueryPanels<kK>(q, HI, D, static_cast<int32_t>(N), qt);
  HWY_ALIGN float kf[kK * kIndexMaxHeadDim];
  HWY_ALIGN float sums[kK * HWY_MAX_BYTES / sizeof(float)];
  for (int64_t i0 = 0; i0 < n; i0 += kK) {
    const int64_t n_keys = std::min<int64_t>(kK, n - i0);
    DecodeKeys(df, keys + i0 * D, n_keys, kK, D, kf);
    std::fill(sums, sums + kK * N, 0.0f);
    ScoreKeyBlock<kK, kD>(df, qt, coef, HI, D, kf, sums);
    for (int64_t k = 0; k < n_keys; ++k) {
      const float s = ReduceSumF(df, hn::LoadU(df, sums + k * N));
      scores[i0 + k] = s * (key_scales[i0 + k] * 256.0f);  // undo DecodeE4m3F16's 2^-8
    }
  }
}

template <class DF>
void IndexScoresTag(DF df, const uint8_t* keys, const float* key_scales, int64_t n, const float* q,
                    const float* coef, int32_t HI, int32_t D, float* scores) {
  const int32_t HV = HI / static_cast<int32_t>(hn::Lanes(df));
  if (D == 128) {  // the V3.2 index_head_dim
    if (HV >= 4) {
      IndexScoresT<3, 128>(df, keys, key_scales, n, q, coef, HI, D, scores);
    } else if (HV >= 2) {
      IndexScoresT<6, 128>(df, keys, key_scales, n, q, coef, HI, D, scores);
    } else {
      IndexScoresT<12, 128>(df, keys, key_scales, n, q, coef, HI, D, scores);
    }
  } else if (HV >= 4) {
    IndexScoresT<3, 0>(df, keys, key_scales, n, q, coef, HI, D, scores);
  } else if (HV >= 2) {
    IndexScoresT<6, 0>(df, keys, key_scales, n, q, coef, HI, D, scores);
  } else {
    IndexScoresT<12, 0>(df, keys, key_scales, n, q, coef, HI, D, scores);
  }
}

inline void IndexScores(const uint8_t* keys, const float* key_scales, int64_t n, const float* q,
                        const float* coef, int32_t HI, int32_t D, float* scores) {
  const hn::ScalableTag<float> df;
  const hn::CappedTag<float, 8> d8;
  const hn::CappedTag<float, 4> d4;
  const hn::CappedTag<float, 1> d1;
  if (HI % static_cast<int32_t>(hn::Lanes(df)) == 0) {
    IndexScoresTag(df, keys, key_scales, n, q, coef, HI, D, scores);
  } else if (HI % static_cast<int32_t>(hn::Lanes(d8)) == 0) {
    IndexScoresTag(d8, keys, key_scales, n, q, coef, HI, D, scores);
  } else if (HI % static_cast<int32_t>(hn::Lanes(d4)) == 0) {
    IndexScoresTag(d4, keys, key_scales, n, q, coef, HI, D, scores);
  } else {
    IndexScoresTag(d1, keys, key_scales, n, q, coef, HI, D, scores);
  }
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_KERNELS_CPU_INDEXER_SCORE_INL_H_
