// Summary statistics of repeated measurements, as llama-bench reports them.
#pragma once

#include <vector>

namespace dss::perf {

struct Stat {
  double mean = 0, stddev = 0;
};

// Mean and sample standard deviation (n - 1; 0 for one value) of a non-empty sample.
Stat stat_of(const std::vector<double>& v);

}  // namespace dss::perf
