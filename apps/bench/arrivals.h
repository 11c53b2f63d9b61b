// Request arrival times of the benchmark: a Poisson process (exponential gaps of mean 1/rate,
// the first request at 0) or, for an infinite rate, everything at 0. Same seed, same times.
#pragma once

#include <cstdint>
#include <vector>

namespace dss::bench {

// Offsets in seconds from the start of the run, non-decreasing. `rate` in requests/s (> 0,
// may be +infinity).
std::vector<double> poisson_arrivals(int32_t n, double rate, uint64_t seed);

}  // namespace dss::bench
