// Benchmark metrics over per-request records, defined exactly as vLLM's `bench serve`
// (vllm/benchmarks/serve.py, calculate_metrics):
//   completed      requests with success; failed ones are counted in `failed` and enter no average
//   TTFT, E2E      per completed request
//   TPOT           per completed request with output_tokens > 1: (E2E - TTFT) / (output_tokens -
//   1);
//                  requests with one output token have no TPOT (for goodput their TPOT is 0)
//   ITL            every chunk gap of every completed request, pooled
//   mean, std (population, numpy's default), median, percentiles (numpy's linear interpolation);
//   an empty sample gives 0 everywhere (numpy on `[] or 0`)
//   throughputs    completed / duration, output tokens / duration, (input + output) / duration
//   goodput        completed requests with TTFT <= slo.ttft and TPOT <= slo.tpot (each if set),
//                  divided by duration
//   peak output tok/s   max over 1-second buckets from the first send (vLLM counts each output
//                  chunk as one token here)
//   max concurrent requests   peak number of completed requests in flight (half-open intervals)
// Pure functions; no clock, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "apps/bench/request_record.h"
#include "apps/bench/slo.h"
#include "base/percentile.h"  // percentile(): numpy's, as the reports use

namespace dss::bench {

struct Distribution {  // all in ms
  double mean = 0, std = 0, median = 0;
  std::vector<std::pair<double, double>> percentiles;  // (p, value)
};
// Stats of `values_s` (seconds) in milliseconds.
Distribution distribution_ms(std::span<const double> values_s, std::span<const double> ps);

struct BenchMetrics {
  int64_t completed = 0, failed = 0;
  int64_t total_input = 0, total_output = 0;
  double request_throughput = 0, request_goodput = 0;
  double output_throughput = 0, total_token_throughput = 0;
  Distribution ttft, tpot, itl, e2el;
  double max_output_tokens_per_s = 0;
  int64_t max_concurrent_requests = 0;
  std::vector<int64_t> output_lens;  // [n_records] output tokens; 0 for failed requests
};

// `duration_s` > 0: wall time of the main run. `ps`: the percentiles to report (e.g. 50, 90, 99).
BenchMetrics compute_metrics(std::span<const RequestRecord> records, double duration_s,
                             const Slo& slo, std::span<const double> ps);

}  // namespace dss::bench
