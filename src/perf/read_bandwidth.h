// Memory read bandwidth of this machine, the denominator of a decode roofline (issue #7).
//
// Method (shared by bench/micro/roofline_bench and `dsserve bench-model`): n threads at once each
// stream their own contiguous part of one buffer much larger than the caches (each thread first
// touches its part, so pages sit near it), summing floats with 4 independent vector accumulators;
// GB/s = bytes read / wall time of the slowest thread, best of `reps` repetitions (noisy VMs).
// The best Highway target this CPU supports is used.
#pragma once

#include <cstdint>
#include <thread>
#include <vector>

#include "base/clock.h"

namespace dss::perf {

// Runs f(thread_index) on n threads at once (fresh threads, so each can first-touch its own
// memory); returns the wall seconds until the last one finishes.
template <class F>
double run_threads(int32_t n, F f) {
  std::vector<std::thread> ts;
  const double t0 = now_seconds();
  for (int32_t i = 0; i < n; ++i) ts.emplace_back([&f, i] { f(i); });
  for (auto& t : ts) t.join();
  return now_seconds() - t0;
}

// Sum of n floats (n a multiple of 64; p 64-byte aligned): the read kernel itself, for callers
// that time reads on threads of their own.
float read_sum(const float* p, int64_t n);

// GB/s (1e9 bytes/s) reading `n_floats` floats of `buf` (64-byte aligned) with `n_threads`
// threads. Overwrites the buffer with zeros first.
double read_gbps(float* buf, int64_t n_floats, int32_t n_threads, int32_t reps = 5);

// The same on a freshly allocated buffer of `mib` MiB (freed before returning).
double measure_read_gbps(int64_t mib, int32_t n_threads, int32_t reps = 5);

}  // namespace dss::perf
