// Monotonic wall clock helpers (for stats and benchmarks; never inside policies).
#pragma once

#include <chrono>
#include <cstdint>

namespace dss {

inline double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

inline int64_t steady_ns() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace dss
