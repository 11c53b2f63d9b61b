// Read-bandwidth kernel (Highway, every compiled target) and the threaded driver.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "perf/read_bandwidth.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace dss::perf::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of n floats (n a multiple of 4 vectors); 4 accumulators hide the add latency.
float ReadSum(const float* HWY_RESTRICT p, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  for (int64_t i = 0; i + 4 * N <= n; i += 4 * N) {
    a0 = hn::Add(a0, hn::Load(d, p + i));
    a1 = hn::Add(a1, hn::Load(d, p + i + N));
    a2 = hn::Add(a2, hn::Load(d, p + i + 2 * N));
    a3 = hn::Add(a3, hn::Load(d, p + i + 3 * N));
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
}

}  // namespace dss::perf::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "perf/read_bandwidth.h"

namespace dss::perf {
HWY_EXPORT(ReadSum);

float read_sum(const float* p, int64_t n) { return HWY_DYNAMIC_DISPATCH(ReadSum)(p, n); }

double read_gbps(float* buf, int64_t n_floats, int32_t n_threads, int32_t reps) {
  n_threads = std::max(n_threads, 1);
  const int64_t per = (n_floats / n_threads) / 64 * 64;
  std::vector<float> sums(static_cast<size_t>(n_threads));  // keeps the reads observable
  run_threads(n_threads, [&](int32_t i) {
    std::memset(buf + i * per, 0, static_cast<size_t>(per) * sizeof(float));
  });
  double best = 0;
  for (int32_t rep = 0; rep < reps; ++rep) {
    const double s = run_threads(n_threads, [&](int32_t i) {
      sums[static_cast<size_t>(i)] += HWY_DYNAMIC_DISPATCH(ReadSum)(buf + i * per, per);
    });
    best = std::max(best, static_cast<double>(per) * n_threads * sizeof(float) / s * 1e-9);
  }
  volatile float sink = 0;
  for (float v : sums) sink = sink + v;
  return best;
}

double measure_read_gbps(int64_t mib, int32_t n_threads, int32_t reps) {
  const int64_t n_floats = mib * (int64_t{1} << 20) / 4;
  auto buf = hwy::AllocateAligned<float>(static_cast<size_t>(n_floats));
  return read_gbps(buf.get(), n_floats, n_threads, reps);
}

}  // namespace dss::perf
#endif  // HWY_ONCE
