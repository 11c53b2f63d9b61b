// Small per-target helpers shared by the Highway kernels.
#if defined(DSS_KERNELS_CPU_HWY_UTIL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DSS_KERNELS_CPU_HWY_UTIL_INL_H_
#undef DSS_KERNELS_CPU_HWY_UTIL_INL_H_
#else
#define DSS_KERNELS_CPU_HWY_UTIL_INL_H_
#endif

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Horizontal sum of all lanes (Highway 1.0 spells it GetLane(SumOfLanes)).
template <class DF>
HWY_INLINE float ReduceSumF(DF df, hn::Vec<DF> v) {
  return hn::GetLane(hn::SumOfLanes(df, v));
}

// exp(x) for x <= 0, with 0 where exp(x) would be an f32 subnormal (x < -87; exp(-87) = 1.6e-38
// is the smallest normal result). Every softmax row has a term exp(0) = 1, so a dropped term is
// below 2^-125 of the sum and of each output element's largest contribution: the same result up to
// rounding of values ~1e-38, while subnormal results (and their products) cost a microcode assist
// per operation on x86 cores - at long context most attended rows are that far below the maximum.
template <class DF>
HWY_INLINE hn::Vec<DF> ExpOrZero(DF df, hn::Vec<DF> x) {
  const auto lo = hn::Set(df, -87.0f);
  return hn::IfThenElseZero(hn::Ge(x, lo), hn::Exp(df, hn::Max(x, lo)));
}

// Lanes(df) e4m3fn codes at `p` as f32 values times 2^-120, exactly: the code sign-extended to
// 32 bits, shifted left by 20 and masked to s.0000eeee.mmm (0x87F00000) (an f32 subnormal for
// the e4m3 subnormals: same mantissa, minimum exponent field 0 in both formats). Callers fold
// 2^120 into a factor of their own (a multiply by a power of two: exact). Requires
// denormals-are-zero off (the default; nothing here sets MXCSR; tests/kernels/matmul_test.cc
// checks every code). NaN codes are not expected.
template <class DF>
HWY_INLINE hn::Vec<DF> DecodeE4m3Shifted(DF df, const uint8_t* HWY_RESTRICT p) {
  const hn::Rebind<int8_t, DF> d8;
  const hn::RebindToSigned<DF> di;
  const auto v = hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const int8_t*>(p)));
  return hn::BitCast(df,
                     hn::And(hn::ShiftLeft<20>(v), hn::Set(di, static_cast<int32_t>(0x87F00000u))));
}

// vdpbf16ps (AVX512-BF16), which Highway 1.0.3 (Debian 12) has no op for: its AVX3 targets are
// compiled without the avx512bf16 attribute, so the instruction is emitted by inline assembly
// here, the one place, and the kernels stay written once against this op. Callers run it only
// where the CPU has the feature (kernels/cpu/cpu_features.h cpu_has_avx512_bf16).
// Per f32 lane i: acc += a.bf16[2i+1] * b.bf16[2i+1], then acc += a.bf16[2i] * b.bf16[2i]: two
// sequential round-to-nearest-even adds of exact products, bf16 subnormal inputs read as zero and
// subnormal results flushed to zero (Intel SDM; the same measured on Zen 5).
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
inline constexpr bool kTargetHasBf16Dot = true;
HWY_INLINE hn::Vec512<float> DotBf16Pairs(hn::Vec512<float> acc, hn::Vec512<uint32_t> a,
                                          hn::Vec512<uint32_t> b) {
  asm("vdpbf16ps %2, %1, %0" : "+v"(acc.raw) : "v"(a.raw), "v"(b.raw));
  return acc;
}
// vcvtne2ps2bf16 (AVX512-BF16, same caveats): the 32 values lo[0..15], hi[0..15] as bf16 words in
// that order (so 32-bit lane p holds the pair (2p, 2p + 1), the even one low): round to nearest
// even, f32 subnormal inputs as zero of their sign (Intel SDM; checked on Zen 5 against that
// model over 64M random non-NaN values: no mismatch, and 0x007FFFFF gives 0, not 2^-126).
HWY_INLINE hn::Vec512<uint32_t> Bf16PairsOf(hn::Vec512<float> lo, hn::Vec512<float> hi) {
  hn::Vec512<uint32_t> out;
  asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(out.raw) : "v"(hi.raw), "v"(lo.raw));
  return out;
}
#else
inline constexpr bool kTargetHasBf16Dot = false;
#endif

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_KERNELS_CPU_HWY_UTIL_INL_H_
