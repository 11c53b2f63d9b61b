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

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_KERNELS_CPU_HWY_UTIL_INL_H_
