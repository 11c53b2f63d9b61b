// run_benchmark: the whole `dsserve bench` flow against one server.
//   1. model: --model, else the first id of GET /v1/models
//   2. a probe request (8-token message, 1 output token): the server answers, and for chat the
//      template overhead = usage.prompt_tokens - 8 is measured (0 without usage)
//   3. --warmup copies of the first planned request (not measured)
//   4. the planned requests at their arrival times; metrics (bench/metrics.h); result JSON
// Probe and warmup tokens are reported under "warmup" so server-side counters can be reconciled.
#pragma once

#include <cmath>
#include <functional>
#include <optional>
#include <string>

#include "apps/bench/metrics.h"
#include "apps/bench/runner.h"
#include "apps/bench/slo.h"
#include "base/status.h"
#include "io/json.h"

namespace dss::bench {

struct BenchOptions {
  std::string base_url = "http://127.0.0.1:8000";
  std::string model;  // "" = ask the server
  std::string scenario = "chat-256";
  std::optional<int32_t> input_len, output_len;
  std::optional<std::string> endpoint;  // "chat" | "completions"; default from the scenario
  double range_ratio = 0;
  int32_t num_prompts = 32;
  double request_rate = INFINITY;  // req/s; inf = all at once
  int32_t max_concurrency = 0;     // 0 = unlimited
  bool ignore_eos = false;
  int32_t shared_prefix_len = 0;
  uint64_t seed = 0;
  int32_t warmup = 0;
  Slo slo;
  std::string tokenizer_dir;  // tokenizer.json directory
  bool progress = true;
  std::string label = "bench";
  double idle_timeout_s = 6 * 3600;  // longest silence of one stream (vLLM: 6 h in all)
  // Called right before and right after the measured run (tune scrapes /metrics there).
  std::function<void()> on_main_start, on_main_end;
};

struct BenchOutcome {
  BenchMetrics metrics;
  RunResult run;
  OrderedJson json;  // the --json-out document
};

Result<BenchOutcome> run_benchmark(const BenchOptions& o);

}  // namespace dss::bench
