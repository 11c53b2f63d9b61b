// Small per-target helpers shared by the Highway kernels.
#if defined(DSS_KERNELS_CPU_HWY_UTIL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DSS_KERNELS_CPU_HWY_UTIL_INL_H_
#undef DSS_KERNELS_CPU_HWY_UTIL_INL_H_
#else
#define DSS_KERNELS_CPU_HWY_UTIL_INL_H_
#endif

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Horizontal sum of all lanes (Highway 1.0 spells it GetLane(SumOfLanes)).
template <class DF>
HWY_INLINE float ReduceSumF(DF df, hn::Vec<DF> v) {
  return hn::GetLane(hn::SumOfLanes(df, v));
}

// Lanes(df) e4m3fn codes at `p` as f32 values times 2^-8, exactly. An e4m3fn code s.eeee.mmm
// placed as f16 bits s.0eeee.mmm0000000 is the same value times 2^-8 (exponent bias 7 vs 15;
// subnormals too, both have minimum exponent field 0), so: sign-extend the byte to 16 bits,
// shift left by 7 (bits 0..6 -> 7..13; the sign extension fills bit 15, the sign bit lands on
// bit 14), clear bit 14, and widen f16 -> f32 (F16C on AVX2/AVX-512). NaN codes are not expected.
template <class DF>
HWY_INLINE hn::Vec<DF> DecodeE4m3F16(DF df, const uint8_t* HWY_RESTRICT p) {
  const hn::Rebind<int8_t, DF> d8;
  const hn::Rebind<int16_t, DF> d16;
  const hn::Rebind<hwy::float16_t, DF> dh;
  const auto b = hn::PromoteTo(d16, hn::LoadU(d8, reinterpret_cast<const int8_t*>(p)));
  const auto h =
      hn::And(hn::ShiftLeft<7>(b), hn::Set(d16, static_cast<int16_t>(-16512)));  // 0xBF80
  return hn::PromoteTo(df, hn::BitCast(dh, h));
}

// 2 * Lanes(df) codes at p as DecodeE4m3F16 decodes them: [p, p + N) to lo, [p + N, p + 2N) to
// hi (one widening, shift and mask over 16-bit lanes for both halves).
template <class DF>
HWY_INLINE void DecodeE4m3F16x2(DF df, const uint8_t* HWY_RESTRICT p, hn::Vec<DF>& lo,
                                hn::Vec<DF>& hi) {
#if HWY_TARGET == HWY_SCALAR
  lo = DecodeE4m3F16(df, p);
  hi = DecodeE4m3F16(df, p + hn::Lanes(df));
#else
  const hn::Repartition<int16_t, DF> d16;        // 2N lanes
  const hn::Rebind<int8_t, decltype(d16)> d8;    // 2N codes
  const hn::Repartition<hwy::float16_t, DF> dh;  // 2N halves
  const hn::Half<decltype(dh)> dhh;              // N halves
  const auto b = hn::PromoteTo(d16, hn::LoadU(d8, reinterpret_cast<const int8_t*>(p)));
  const auto h =
      hn::BitCast(dh, hn::And(hn::ShiftLeft<7>(b), hn::Set(d16, static_cast<int16_t>(-16512))));
  lo = hn::PromoteTo(df, hn::LowerHalf(dhh, h));
  hi = hn::PromoteTo(df, hn::UpperHalf(dhh, h));
#endif
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_KERNELS_CPU_HWY_UTIL_INL_H_
