// numpy.percentile(values, p) with numpy's default "linear" method, for the benchmarks' reports
// (the HTTP client's latency percentiles, bench-model's median of paired repetitions), so their
// figures match what the same samples give in numpy.
#pragma once

#include <vector>

namespace dss {

// The value at virtual index (n - 1) * p / 100 of the sorted sample, interpolated linearly
// between its two neighbours; p in [0, 100]; 0 for an empty sample.
double percentile(std::vector<double> values, double p);

}  // namespace dss
