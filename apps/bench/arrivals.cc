#include "apps/bench/arrivals.h"

#include <cmath>

#include "base/check.h"
#include "base/rng.h"

namespace dss::bench {

std::vector<double> poisson_arrivals(int32_t n, double rate, uint64_t seed) {
  DSS_CHECK(rate > 0, "rate=", rate);
  std::vector<double> t(static_cast<size_t>(n), 0.0);
  if (std::isinf(rate)) return t;
  Rng rng(seed ^ 0x5eedA221ull);
  for (size_t i = 1; i < t.size(); ++i)
    t[i] = t[i - 1] - std::log(1.0 - rng.uniform_double()) / rate;
  return t;
}

}  // namespace dss::bench
