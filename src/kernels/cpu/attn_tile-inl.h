// Per-target body of kernels/cpu/attn_tile.h. Included once per Highway target (foreach_target).
#if defined(DSS_KERNELS_CPU_ATTN_TILE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DSS_KERNELS_CPU_ATTN_TILE_INL_H_
#undef DSS_KERNELS_CPU_ATTN_TILE_INL_H_
#else
#define DSS_KERNELS_CPU_ATTN_TILE_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <limits>

#include "hwy/highway.h"
#include "kernels/cpu/hwy_util-inl.h"

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Register tile of both GEMMs: kAttnI tokens x kAttnJ vectors (positions for the scores, value
// dimensions for P V). 32-register AVX-512: 24 accumulators + 4 loads + a broadcast; the
// 16-register targets: 8 + 2 + 1.
#if HWY_TARGET <= HWY_AVX3
inline constexpr int kAttnI = 6, kAttnJ = 4;
#else
inline constexpr int kAttnI = 4, kAttnJ = 2;
#endif

// One query dimension c of a scores tile: acc[i][v] += q[i, c] * kt_row[v-th vector].
template <int kI, int kJ, class DF>
HWY_INLINE void ScoresStep(DF df, const float* HWY_RESTRICT q_c, int64_t ldq,
                           const float* HWY_RESTRICT kt_row, hn::Vec<DF> (&acc)[kI][kJ]) {
  const size_t N = hn::Lanes(df);
  hn::Vec<DF> k[kJ];
  for (int v = 0; v < kJ; ++v) k[v] = hn::LoadU(df, kt_row + v * N);
  for (int i = 0; i < kI; ++i) {
    const auto qi = hn::Set(df, q_c[i * ldq]);
    for (int v = 0; v < kJ; ++v) acc[i][v] = hn::MulAdd(qi, k[v], acc[i][v]);
  }
}

// S[i, j0 + (0 .. kJ vectors)) for kI tokens: one FMA chain per element over c in order.
template <int kI, int kJ, class DF>
HWY_INLINE void ScoresTile(DF df, const float* HWY_RESTRICT q, int64_t ldq,
                           const float* HWY_RESTRICT kt_a, int64_t d_a,
                           const float* HWY_RESTRICT kt_b, int64_t d_b, int64_t ld_kt, int64_t j0,
                           float* HWY_RESTRICT s, int64_t lds) {
  const size_t N = hn::Lanes(df);
  hn::Vec<DF> acc[kI][kJ];
  for (int i = 0; i < kI; ++i)
    for (int v = 0; v < kJ; ++v) acc[i][v] = hn::Zero(df);
  for (int64_t c = 0; c < d_a; ++c) ScoresStep<kI, kJ>(df, q + c, ldq, kt_a + c * ld_kt + j0, acc);
  for (int64_t c = 0; c < d_b; ++c)
    ScoresStep<kI, kJ>(df, q + d_a + c, ldq, kt_b + c * ld_kt + j0, acc);
  for (int i = 0; i < kI; ++i)
    for (int v = 0; v < kJ; ++v) hn::StoreU(acc[i][v], df, s + i * lds + j0 + v * N);
}

// kI tokens (kI <= kAttnI; ni == kI), positions [0, j_end) in vectors: kAttnJ at a time, then one.
template <int kI>
HWY_INLINE void ScoresGroup(int64_t ni, const float* HWY_RESTRICT q, int64_t ldq,
                            const float* HWY_RESTRICT kt_a, int64_t d_a,
                            const float* HWY_RESTRICT kt_b, int64_t d_b, int64_t ld_kt,
                            int64_t j_end, float* HWY_RESTRICT s, int64_t lds) {
  if constexpr (kI > 1) {
    if (ni < kI) {
      ScoresGroup<kI - 1>(ni, q, ldq, kt_a, d_a, kt_b, d_b, ld_kt, j_end, s, lds);
      return;
    }
  }
  const hn::ScalableTag<float> df;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  int64_t j = 0;
  for (; j + kAttnJ * N <= j_end; j += kAttnJ * N)
    ScoresTile<kI, kAttnJ>(df, q, ldq, kt_a, d_a, kt_b, d_b, ld_kt, j, s, lds);
  for (; j < j_end; j += N) ScoresTile<kI, 1>(df, q, ldq, kt_a, d_a, kt_b, d_b, ld_kt, j, s, lds);
}

// The largest end over tokens [i0, i0 + ni), rounded up to whole vectors of N, at most n_pos.
inline int64_t GroupEnd(const int32_t* j_end, int64_t i0, int64_t ni, int64_t N, int64_t n_pos) {
  if (j_end == nullptr) return n_pos;
  int64_t e = 0;
  for (int64_t i = i0; i < i0 + ni; ++i) e = std::max<int64_t>(e, j_end[i]);
  return std::min(n_pos, (e + N - 1) / N * N);
}

inline void AttnTileScores(const float* HWY_RESTRICT q, int64_t ldq, int64_t n_tok,
                           const float* HWY_RESTRICT kt_a, int64_t d_a,
                           const float* HWY_RESTRICT kt_b, int64_t d_b, int64_t ld_kt,
                           int64_t n_pos, const int32_t* HWY_RESTRICT j_end, float* HWY_RESTRICT s,
                           int64_t lds) {
  const hn::ScalableTag<float> df;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t i0 = 0; i0 < n_tok; i0 += kAttnI) {
    const int64_t ni = std::min<int64_t>(kAttnI, n_tok - i0);
    ScoresGroup<kAttnI>(ni, q + i0 * ldq, ldq, kt_a, d_a, kt_b, d_b, ld_kt,
                        GroupEnd(j_end, i0, ni, N, n_pos), s + i0 * lds, lds);
  }
}

inline void AttnTileSoftmax(float* HWY_RESTRICT s, int64_t lds, int64_t n_tok, int64_t n_pos,
                            const int32_t* HWY_RESTRICT n_valid, float scale, float* HWY_RESTRICT m,
                            float* HWY_RESTRICT l, float* HWY_RESTRICT corr) {
  const hn::ScalableTag<float> df;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const auto neg_inf = hn::Set(df, kNegInf), vscale = hn::Set(df, scale);
  for (int64_t i = 0; i < n_tok; ++i) {
    float* HWY_RESTRICT row = s + i * lds;
    const int64_t nv = std::min<int64_t>(n_valid[i], n_pos);
    auto vmax = neg_inf;
    for (int64_t j = 0; j < nv; j += N) {
      auto x = hn::Mul(hn::LoadU(df, row + j), vscale);
      if (j + N > nv) x = hn::IfThenElse(hn::FirstN(df, static_cast<size_t>(nv - j)), x, neg_inf);
      vmax = hn::Max(vmax, x);
    }
    const float mx = hn::GetLane(hn::MaxOfLanes(df, vmax));
    if (!(mx > kNegInf)) {  // nothing attended in this tile
      for (int64_t j = 0; j < n_pos; j += N) hn::StoreU(hn::Zero(df), df, row + j);
      corr[i] = 1.0f;
      continue;
    }
    const float m_new = std::max(m[i], mx);
    const auto vm = hn::Set(df, m_new);
    auto vsum = hn::Zero(df);
    int64_t j = 0;
    for (; j < nv; j += N) {
      auto p = ExpOrZero(df, hn::Sub(hn::Mul(hn::LoadU(df, row + j), vscale), vm));
      if (j + N > nv) p = hn::IfThenElseZero(hn::FirstN(df, static_cast<size_t>(nv - j)), p);
      vsum = hn::Add(vsum, p);
      hn::StoreU(p, df, row + j);
    }
    for (; j < n_pos; j += N) hn::StoreU(hn::Zero(df), df, row + j);
    // exp(m - M): 0 for m = -inf (ExpOrZero of -inf), 1 when the maximum did not move.
    const float c = hn::GetLane(ExpOrZero(df, hn::Set(df, m[i] - m_new)));
    corr[i] = c;
    l[i] = l[i] * c + ReduceSumF(df, vsum);
    m[i] = m_new;
  }
}

// o[i, e0 + (0 .. kD vectors of df))] := o * corr[i] + sum_{j < j_end} p[i, j] * v[j, ...].
template <int kI, int kD, class DF>
HWY_INLINE void PvTile(DF df, const float* HWY_RESTRICT p, int64_t ldp, int64_t j_end,
                       const float* HWY_RESTRICT v, int64_t ldv, int64_t e0,
                       const float* HWY_RESTRICT corr, float* HWY_RESTRICT o, int64_t ldo) {
  const size_t N = hn::Lanes(df);
  hn::Vec<DF> acc[kI][kD];
  for (int i = 0; i < kI; ++i)
    for (int d = 0; d < kD; ++d) acc[i][d] = hn::Zero(df);
  for (int64_t j = 0; j < j_end; ++j) {
    hn::Vec<DF> vv[kD];
    for (int d = 0; d < kD; ++d) vv[d] = hn::LoadU(df, v + j * ldv + e0 + d * N);
    for (int i = 0; i < kI; ++i) {
      const auto pi = hn::Set(df, p[i * ldp + j]);
      for (int d = 0; d < kD; ++d) acc[i][d] = hn::MulAdd(pi, vv[d], acc[i][d]);
    }
  }
  for (int i = 0; i < kI; ++i) {
    const auto ci = hn::Set(df, corr[i]);
    for (int d = 0; d < kD; ++d) {
      float* out = o + i * ldo + e0 + d * N;
      hn::StoreU(hn::Add(hn::Mul(hn::LoadU(df, out), ci), acc[i][d]), df, out);
    }
  }
}

// kI tokens (ni == kI): the value dimensions kAttnJ vectors at a time, then one vector, then the
// ragged end one lane at a time (same per-element chain through a one-lane tag).
template <int kI>
HWY_INLINE void PvGroup(int64_t ni, const float* HWY_RESTRICT p, int64_t ldp, int64_t j_end,
                        const float* HWY_RESTRICT v, int64_t ldv, int64_t d_v,
                        const float* HWY_RESTRICT corr, float* HWY_RESTRICT o, int64_t ldo) {
  if constexpr (kI > 1) {
    if (ni < kI) {
      PvGroup<kI - 1>(ni, p, ldp, j_end, v, ldv, d_v, corr, o, ldo);
      return;
    }
  }
  const hn::ScalableTag<float> df;
  const hn::CappedTag<float, 1> d1;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  int64_t e = 0;
  for (; e + kAttnJ * N <= d_v; e += kAttnJ * N)
    PvTile<kI, kAttnJ>(df, p, ldp, j_end, v, ldv, e, corr, o, ldo);
  for (; e + N <= d_v; e += N) PvTile<kI, 1>(df, p, ldp, j_end, v, ldv, e, corr, o, ldo);
  for (; e < d_v; ++e) PvTile<kI, 1>(d1, p, ldp, j_end, v, ldv, e, corr, o, ldo);
}

inline void AttnTilePv(const float* HWY_RESTRICT p, int64_t ldp, int64_t n_tok,
                       const int32_t* HWY_RESTRICT j_end, const float* HWY_RESTRICT v, int64_t ldv,
                       int64_t d_v, const float* HWY_RESTRICT corr, float* HWY_RESTRICT o,
                       int64_t ldo) {
  for (int64_t i0 = 0; i0 < n_tok; i0 += kAttnI) {
    const int64_t ni = std::min<int64_t>(kAttnI, n_tok - i0);
    int64_t je = 0;  // exact (no rounding): rows of v past every token's end are never read
    for (int64_t i = i0; i < i0 + ni; ++i) je = std::max<int64_t>(je, j_end[i]);
    PvGroup<kAttnI>(ni, p + i0 * ldp, ldp, je, v, ldv, d_v, corr + i0, o + i0 * ldo, ldo);
  }
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_KERNELS_CPU_ATTN_TILE_INL_H_
