// `dsserve bench`: a serving benchmark against any OpenAI-compatible server (dsserve, vLLM,
// SGLang, llama-server), with vLLM `bench serve`'s metric definitions and result keys
// (apps/bench, docs/bench.md).
#include <cmath>
#include <cstdio>
#include <fstream>

#include "apps/bench/benchmark.h"
#include "apps/bench/report.h"
#include "apps/dsserve/bench_flags.h"
#include "apps/dsserve/commands.h"

namespace dss::app {

namespace {

struct BenchArgs {
  bench::BenchOptions o;
  BenchFlagText text;
  std::string json_out;
};

int run_bench(BenchArgs& a) {
  if (Status s = finish_bench_flags(a.text, a.o); !s) {
    std::fprintf(stderr, "dsserve bench: %s\n", s.message().c_str());
    return 2;
  }
  auto r = bench::run_benchmark(a.o);
  if (!r) {
    std::fprintf(stderr, "dsserve bench: %s\n", r.message().c_str());
    return 1;
  }
  bench::print_summary(stdout, r->run, r->metrics, !a.o.slo.empty());
  if (!a.json_out.empty()) {
    std::ofstream f(a.json_out);
    f << r->json.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "dsserve bench: cannot write %s\n", a.json_out.c_str());
      return 1;
    }
  }
  return r->metrics.failed > 0 ? 3 : 0;
}

}  // namespace

void register_bench_command(CLI::App& app) {
  auto* a = &command_options<BenchArgs>();
  auto* cmd = app.add_subcommand(
      "bench", "Benchmark an OpenAI-compatible server (TTFT, TPOT, ITL, E2E, throughput, goodput)");
  cmd->add_option("--base-url", a->o.base_url,
                  "Server URL, http://HOST:PORT (a /v1 suffix is fine)")
      ->capture_default_str();
  cmd->add_option("--model", a->o.model,
                  "Model name sent in requests (default: the first id of GET /v1/models)");
  add_bench_flags(cmd, a->o, a->text);
  cmd->add_option("--json-out", a->json_out,
                  "Write the result JSON (vLLM's keys: completed, total_output_tokens, ...) here");
  cmd->callback([a] { exit_code = run_bench(*a); });
}

}  // namespace dss::app
