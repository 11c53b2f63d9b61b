// FP32 FMA peak kernel shared by perf/compute_peak.h (roofline_bench, `dsserve bench-model`) and
// the kernel benchmarks that report a fraction of it (per-target body: include after
// foreach_target, like the kernels' -inl.h files).
#if defined(DSS_PERF_FMA_CHAINS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DSS_PERF_FMA_CHAINS_INL_H_
#undef DSS_PERF_FMA_CHAINS_INL_H_
#else
#define DSS_PERF_FMA_CHAINS_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace dss::perf::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 12 independent FMA chains x iters; returns FLOPs done (2 per lane per FMA) and a value the
// compiler cannot drop. The chains start from distinct values: identical chains are one
// expression to the compiler, which keeps a single latency-bound chain (an earlier version did,
// and reported 12x the FLOPs it ran).
inline double FmaChains(int64_t iters, float* sink) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const auto m = hn::Set(d, 0.999999f), c = hn::Set(d, 1e-7f);
  V a[12];
  for (int k = 0; k < 12; ++k) a[k] = hn::Set(d, 1.0f + 1e-3f * static_cast<float>(k));
  for (int64_t i = 0; i < iters; ++i) {
    for (int k = 0; k < 12; ++k) a[k] = hn::MulAdd(a[k], m, c);
  }
  auto s = a[0];
  for (int k = 1; k < 12; ++k) s = hn::Add(s, a[k]);
  *sink += hn::GetLane(s);
  return 2.0 * 12.0 * static_cast<double>(hn::Lanes(d)) * static_cast<double>(iters);
}

}  // namespace dss::perf::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_PERF_FMA_CHAINS_INL_H_
