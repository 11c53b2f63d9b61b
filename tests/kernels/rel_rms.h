// The relative RMS error the attention kernel tests compare against their double references with:
// sqrt(sum (got - want)^2 / sum want^2) over n values.
#pragma once

#include <cmath>
#include <cstdint>

namespace dss::test {

inline double rel_rms(const float* got, const float* want, int64_t n) {
  double num = 0.0, den = 1e-30;
  for (int64_t i = 0; i < n; ++i) {
    num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

}  // namespace dss::test
