// FP32 FMA peak kernel shared by roofline_bench and the kernel benchmarks that report a fraction of
// it (per-target body: include after foreach_target, like the kernels' -inl.h files).
#if defined(DSS_BENCH_MICRO_FMA_CHAINS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DSS_BENCH_MICRO_FMA_CHAINS_INL_H_
#undef DSS_BENCH_MICRO_FMA_CHAINS_INL_H_
#else
#define DSS_BENCH_MICRO_FMA_CHAINS_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace dss::bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 12 independent FMA chains x iters; returns FLOPs done (2 per lane per FMA) and a value the
// compiler cannot drop.
inline double FmaChains(int64_t iters, float* sink) {
  const hn::ScalableTag<float> d;
  auto m = hn::Set(d, 0.999999f), c = hn::Set(d, 1e-7f);
  auto a0 = hn::Set(d, 1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0,
       a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  for (int64_t i = 0; i < iters; ++i) {
    a0 = hn::MulAdd(a0, m, c);
    a1 = hn::MulAdd(a1, m, c);
    a2 = hn::MulAdd(a2, m, c);
    a3 = hn::MulAdd(a3, m, c);
    a4 = hn::MulAdd(a4, m, c);
    a5 = hn::MulAdd(a5, m, c);
    a6 = hn::MulAdd(a6, m, c);
    a7 = hn::MulAdd(a7, m, c);
    a8 = hn::MulAdd(a8, m, c);
    a9 = hn::MulAdd(a9, m, c);
    a10 = hn::MulAdd(a10, m, c);
    a11 = hn::MulAdd(a11, m, c);
  }
  auto s =
      hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(a4, a5), hn::Add(a6, a7)));
  s = hn::Add(s, hn::Add(hn::Add(a8, a9), hn::Add(a10, a11)));
  *sink += hn::GetLane(s);
  return 2.0 * 12.0 * static_cast<double>(hn::Lanes(d)) * static_cast<double>(iters);
}

}  // namespace dss::bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_BENCH_MICRO_FMA_CHAINS_INL_H_
