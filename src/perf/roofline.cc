#include "perf/roofline.h"

#include <algorithm>

#include "base/check.h"

namespace dss::perf {

std::vector<double> paired_roofline_pct(const std::vector<double>& tok_s,
                                        const std::vector<double>& bw_gbps, int64_t bytes) {
  DSS_CHECK(bw_gbps.size() == tok_s.size() + 1);
  std::vector<double> pct;
  for (size_t i = 0; i < tok_s.size(); ++i) {
    const double bw = std::max(bw_gbps[i], bw_gbps[i + 1]);
    pct.push_back(100.0 * tok_s[i] * static_cast<double>(bytes) / (bw * 1e9));
  }
  return pct;
}

}  // namespace dss::perf
