// Monotonic wall clock helpers (for stats and benchmarks; never inside policies).
#pragma once

#include <chrono>

namespace dss {

inline double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace dss
