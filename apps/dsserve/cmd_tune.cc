// `dsserve tune`: runs `dsserve bench` over a grid of server (or client) settings, each on a
// fresh `dsserve serve` child of this same binary, and recommends the best setting under an SLO
// (apps/bench/tune.h, docs/bench.md).
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "apps/bench/tune.h"
#include "apps/dsserve/bench_flags.h"
#include "apps/dsserve/commands.h"

namespace dss::app {

namespace {

struct TuneArgs {
  bench::TuneOptions o;
  BenchFlagText text;
  std::string serve_args;
  std::string base_url;
};

int run_tune_cmd(TuneArgs& a, const std::string& command_line) {
  if (a.o.bench.tokenizer_dir.empty() && !a.o.model_dir.empty() &&
      std::filesystem::exists(a.o.model_dir + "/tokenizer.json"))
    a.o.bench.tokenizer_dir = a.o.model_dir;
  if (Status s = finish_bench_flags(a.text, a.o.bench); !s) {
    std::fprintf(stderr, "dsserve tune: %s\n", s.message().c_str());
    return 2;
  }
  if (a.o.bench.slo.empty()) {
    std::fprintf(stderr, "dsserve tune: --slo is required (e.g. ttft:2000,tpot:500)\n");
    return 2;
  }
  if (a.base_url.empty() == a.o.model_dir.empty()) {
    std::fprintf(stderr, "dsserve tune: give exactly one of --model DIR and --base-url URL\n");
    return 2;
  }
  a.o.use_running_server = !a.base_url.empty();
  if (a.o.use_running_server) a.o.bench.base_url = a.base_url;
  std::istringstream ss(a.serve_args);
  for (std::string w; ss >> w;) a.o.serve_args.push_back(w);
  a.o.exe = "/proc/self/exe";
  a.o.command_line = command_line;
  if (Status s = bench::run_tune(a.o); !s) {
    std::fprintf(stderr, "dsserve tune: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

void register_tune_command(CLI::App& app) {
  auto* a = &command_options<TuneArgs>();
  auto* cmd = app.add_subcommand(
      "tune", "Benchmark a grid of server settings and recommend flags under a latency SLO");
  cmd->add_option("--model", a->o.model_dir, "Checkpoint directory served for every setting");
  cmd->add_option("--base-url", a->base_url,
                  "Use this running server instead (grid keys max-concurrency, request-rate only)");
  add_bench_flags(cmd, a->o.bench, a->text);
  cmd->add_option(
      "--grid", a->o.grid,
      "KEY=V1,V2,... (repeatable; product of axes): a `serve` flag such as "
      "max-running-requests or chunked-prefill-size, or max-concurrency / request-rate");
  cmd->add_option("--serve-args", a->serve_args,
                  "Extra `dsserve serve` flags for every setting, e.g. \"--threads 2\"");
  cmd->add_option("--out-dir", a->o.out_dir, "Where tune.md, tune.svg, tune.json go")
      ->capture_default_str();
  cmd->add_option("--start-timeout", a->o.start_timeout_s,
                  "Seconds a server may take to start and answer /health")
      ->capture_default_str();
  cmd->callback([a] { exit_code = run_tune_cmd(*a, command_line); });
}

}  // namespace dss::app
