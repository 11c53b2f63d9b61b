// The decode roofline against the read bandwidth, per repetition (bench-model's
// decode_bs1_roofline_pct_paired).
#pragma once

#include <cstdint>
#include <vector>

namespace dss::perf {

// Batch 1 against the roofline per repetition: its tok/s times the bytes per token over the
// higher of the bandwidth samples (GB/s) right before and after it (the lower, conservative
// percentage). bw_gbps has one sample more than tok_s (repetition i between samples i and
// i + 1). The VM's bandwidth switches regime within a run (minutes, sometimes seconds), so one
// pair of samples around all repetitions can pair a slow spell's decode with a fast spell's
// bandwidth or the reverse; paired per repetition, the median is the figure.
std::vector<double> paired_roofline_pct(const std::vector<double>& tok_s,
                                        const std::vector<double>& bw_gbps, int64_t bytes);

}  // namespace dss::perf
