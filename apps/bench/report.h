// The benchmark's outputs: the result JSON (vLLM `bench serve` keys at the top level) and the
// human-readable summary (vLLM's layout).
#pragma once

#include <cstdio>
#include <span>

#include "apps/bench/metrics.h"
#include "apps/bench/runner.h"
#include "io/json.h"

namespace dss::bench {

// Adds vLLM's result keys to `out`: duration, completed, failed, total_input_tokens,
// total_output_tokens, request_throughput, request_goodput (null without an SLO),
// output_throughput, total_token_throughput, max_output_tokens_per_s, max_concurrent_requests,
// {mean,median,std}_{ttft,tpot,itl,e2el}_ms, p{P}_{...}_ms, and the per-request arrays
// input_lens, output_lens, ttfts, itls, latencies, start_times, generated_texts, errors.
void add_result_json(const RunResult& run, const BenchMetrics& m, bool has_slo, OrderedJson& out);

// "============ Serving Benchmark Result ============" block.
void print_summary(std::FILE* f, const RunResult& run, const BenchMetrics& m, bool has_slo);

}  // namespace dss::bench
