// The median of the micro-benchmarks' rounds (stream_ratio_bench, cold_stream_bench): the upper
// middle value for an even count.
#pragma once

#include <algorithm>
#include <vector>

namespace dss::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace dss::bench
