// Arithmetic peak kernels (perf/compute_peak.h). Per-target bodies, dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "perf/compute_peak.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// (after foreach_target: re-included once per target)
#include "kernels/cpu/hwy_util-inl.h"
#include "perf/fma_chains-inl.h"

HWY_BEFORE_NAMESPACE();
namespace dss::perf::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Independent bf16-pair dot chains x iters (each op: 2 x Lanes(f32) products, accumulated). Without
// vdpbf16ps: 5 widen-multiply chains of 2 accumulators, which fit the 16 AVX2 registers with the
// operands and temporaries (8 or 6 spilled, which measured the store-forwarding latency instead of
// the arithmetic). With AVX512-BF16: 16 vdpbf16ps chains (16 of the 32 zmm registers; 10 chains
// were latency bound on Zen 5: 606 against 712 GFLOP/s at 2 threads, 16 and 24 chains equal). Every
// op reads a new bf16 vector (L1-resident, cycled) against one fixed vector, as a dot-product
// kernel streams one operand: the widening is measured with the FMAs (loop-invariant operands would
// let the compiler widen once and merge the chains).
double Bf16Chains(int64_t iters, float* sink) {
#if HWY_TARGET == HWY_SCALAR
  (void)iters;
  (void)sink;
  return 0.0;  // no bf16 vectors on the scalar target
#else
  const hn::ScalableTag<float> df;
  const hn::Repartition<hwy::bfloat16_t, decltype(df)> dbf;
  using V = hn::Vec<decltype(df)>;
  constexpr size_t kVecs = 18;
  const size_t nb = hn::Lanes(dbf);
  HWY_ALIGN hwy::bfloat16_t xs[kVecs * hn::MaxLanes(dbf)];
  HWY_ALIGN hwy::bfloat16_t ys[hn::MaxLanes(dbf)];
  for (size_t k = 0; k < kVecs * nb; ++k)
    xs[k] = hwy::BF16FromF32(0.999f - 1e-4f * static_cast<float>(k % 7));
  for (size_t k = 0; k < nb; ++k) ys[k] = hwy::BF16FromF32(1e-3f);
  const auto y = hn::Load(dbf, ys);
  constexpr int kChains = 5;
  V a[kChains], b[kChains];
  for (int k = 0; k < kChains; ++k) {
    a[k] = hn::Set(df, 1e-3f * static_cast<float>(k));
    b[k] = hn::Zero(df);
  }
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if (__builtin_cpu_supports("avx512bf16")) {  // kDotChains chains of one op each
    constexpr int kDotChains = 16;
    static_assert(kDotChains + 2 <= kVecs);
    const hn::Repartition<uint32_t, decltype(df)> du;
    const auto yu = hn::BitCast(du, y);
    V acc[kDotChains];
    for (auto& v : acc) v = hn::Zero(df);
    for (int64_t i = 0; i < iters; ++i) {
      const auto* x = reinterpret_cast<const uint32_t*>(xs + static_cast<size_t>(i & 1) * 2 * nb);
      for (int k = 0; k < kDotChains; ++k)
        acc[k] = dss::cpu::HWY_NAMESPACE::DotBf16Pairs(acc[k], hn::Load(du, x + k * nb / 2), yu);
    }
    auto s = acc[0];
    for (int k = 1; k < kDotChains; ++k) s = hn::Add(s, acc[k]);
    *sink += hn::GetLane(s);
    // Each vdpbf16ps: Lanes(f32) lanes x 2 products x (multiply + add).
    return kDotChains * 4.0 * static_cast<double>(hn::Lanes(df)) * static_cast<double>(iters);
  }
#endif
  for (int64_t i = 0; i < iters; ++i) {
    const hwy::bfloat16_t* x = xs + static_cast<size_t>(i & 1) * kChains * nb;
    for (int k = 0; k < kChains; ++k)
      a[k] = hn::ReorderWidenMulAccumulate(df, hn::Load(dbf, x + k * nb), y, a[k], b[k]);
  }
  auto s = hn::Add(a[0], b[0]);
  for (int k = 1; k < kChains; ++k) s = hn::Add(s, hn::Add(a[k], b[k]));
  *sink += hn::GetLane(s);
  return 2.0 * kChains * 2.0 * static_cast<double>(hn::Lanes(df)) * static_cast<double>(iters);
#endif
}

}  // namespace dss::perf::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <vector>

#include "perf/compute_peak.h"
#include "perf/read_bandwidth.h"

namespace dss::perf {
HWY_EXPORT(FmaChains);
HWY_EXPORT(Bf16Chains);

namespace {

template <class Kernel>
double peak_gflops(Kernel k, int32_t n_threads, int32_t reps) {
  const int64_t iters = 20'000'000;
  double best = 0;
  for (int32_t rep = 0; rep < reps; ++rep) {
    std::vector<double> flops(static_cast<size_t>(n_threads));
    std::vector<float> sinks(static_cast<size_t>(n_threads));
    const double s = run_threads(n_threads, [&](int i) {
      flops[static_cast<size_t>(i)] = k(iters, &sinks[static_cast<size_t>(i)]);
    });
    double total = 0;
    for (double f : flops) total += f;
    best = std::max(best, total / s * 1e-9);
  }
  return best;
}

}  // namespace

double measure_fma_gflops(int32_t n_threads, int32_t reps) {
  return peak_gflops([](int64_t it, float* s) { return HWY_DYNAMIC_DISPATCH(FmaChains)(it, s); },
                     n_threads, reps);
}

double measure_bf16_dot_gflops(int32_t n_threads, int32_t reps) {
  return peak_gflops([](int64_t it, float* s) { return HWY_DYNAMIC_DISPATCH(Bf16Chains)(it, s); },
                     n_threads, reps);
}

}  // namespace dss::perf
#endif  // HWY_ONCE
