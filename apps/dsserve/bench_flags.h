// The workload flags shared by `dsserve bench` and `dsserve tune` (one definition, one help).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "apps/bench/benchmark.h"
#include "base/status.h"

namespace dss::app {

// Flags parsed as text first and converted after parsing (inf rates, SLO strings).
struct BenchFlagText {
  std::string request_rate = "inf";
  std::string slo;
  bool no_progress = false;
};

// Adds --model, --scenario, --input-len, --output-len, --range-ratio, --num-prompts,
// --request-rate, --max-concurrency, --ignore-eos, --shared-prefix-len, --seed, --warmup,
// --endpoint, --slo, --tokenizer, --no-progress. `o` and `t` must outlive parsing.
void add_bench_flags(CLI::App* cmd, bench::BenchOptions& o, BenchFlagText& t);
// Converts the text flags into `o`; input errors name the flag.
Status finish_bench_flags(const BenchFlagText& t, bench::BenchOptions& o);

}  // namespace dss::app
