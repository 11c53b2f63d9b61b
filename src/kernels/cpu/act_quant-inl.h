// Per-target body of kernels/cpu/act_quant.h. Included once per Highway target (foreach_target).
#if defined(DSS_KERNELS_CPU_ACT_QUANT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DSS_KERNELS_CPU_ACT_QUANT_INL_H_
#undef DSS_KERNELS_CPU_ACT_QUANT_INL_H_
#else
#define DSS_KERNELS_CPU_ACT_QUANT_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "hwy/highway.h"
#include "tensor/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// v (already clamped to [-448, 448]) rounded to the nearest e4m3fn value, ties to even.
// Normal range (|v| >= 2^-6): keep 3 of the 23 f32 mantissa bits with round-to-nearest-even on
// the bit pattern (a carry into the exponent is the correct next binade). Subnormal range: the
// grid is uniform, 2^-9, so Round(|v| * 2^9) * 2^-9 (Round is ties-to-even).
template <class DF>
HWY_INLINE hn::Vec<DF> RoundToE4m3(DF df, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  const auto a = hn::Abs(v);
  const auto bits = hn::BitCast(du, a);
  const auto lsb = hn::And(hn::ShiftRight<20>(bits), hn::Set(du, 1u));
  const auto rounded =
      hn::And(hn::Add(hn::Add(bits, hn::Set(du, 0x7FFFFu)), lsb), hn::Set(du, 0xFFF00000u));
  const auto q_normal = hn::BitCast(df, rounded);
  const auto q_sub = hn::Mul(hn::Round(hn::Mul(a, hn::Set(df, 512.0f))), hn::Set(df, 1.0f / 512));
  const auto q = hn::IfThenElse(a < hn::Set(df, 0.015625f), q_sub, q_normal);
  return hn::CopySign(q, v);
}

// The block scale (see act_quant.h).
inline float ActQuantScale(float amax, bool ue8m0) {
  if (!ue8m0) return std::max(amax, 1e-4f) / kFp8E4M3Max;
  int e = 0;
  const float m = std::frexp(std::max(amax, 1e-4f) * (1.0f / kFp8E4M3Max), &e);
  return m == 0.5f ? std::ldexp(1.0f, e - 1) : std::ldexp(1.0f, e);
}

inline void ActQuantFp8(const float* x, int64_t n_tok, int64_t n_cols, bool ue8m0, float* y) {
  const hn::ScalableTag<float> df;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  const auto lo = hn::Set(df, -kFp8E4M3Max), hi = hn::Set(df, kFp8E4M3Max);
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* xr = x + t * n_cols;
    float* yr = y + t * n_cols;
    for (int64_t c0 = 0; c0 < n_cols; c0 += 128) {
      const int64_t c1 = std::min(n_cols, c0 + 128);
      auto vmax = hn::Zero(df);
      int64_t c = c0;
      for (; c + N <= c1; c += N) vmax = hn::Max(vmax, hn::Abs(hn::LoadU(df, xr + c)));
      float amax = hn::GetLane(hn::MaxOfLanes(df, vmax));
      for (; c < c1; ++c) amax = std::max(amax, std::fabs(xr[c]));
      const float s = ActQuantScale(amax, ue8m0);
      const auto vs = hn::Set(df, s);
      c = c0;
      for (; c + N <= c1; c += N) {
        const auto v = hn::Min(hn::Max(hn::Div(hn::LoadU(df, xr + c), vs), lo), hi);
        hn::StoreU(hn::Mul(RoundToE4m3(df, v), vs), df, yr + c);
      }
      for (; c < c1; ++c) {
        const float v = std::clamp(xr[c] / s, -kFp8E4M3Max, kFp8E4M3Max);
        yr[c] = fp8e4m3_to_f32(f32_to_fp8e4m3(v)) * s;
      }
    }
  }
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_KERNELS_CPU_ACT_QUANT_INL_H_
