// In-process engine benchmark (no HTTP): N requests of L_in prompt tokens and L_out new tokens,
// all submitted at once (continuous batching) versus the same requests one at a time, on one
// engine. Prints output tokens/s of both and their ratio - a ratio measured in one run, so the
// machine's noise largely cancels. Prompts are random token ids; greedy, ignore_eos; the prefix
// cache is off so the two phases do the same work.
//
//   engine_bench --model models/ds-mini [--requests 16] [--input-len 256] [--output-len 128]
//                [--threads N] [--matmul-dtype f32|bf16|auto] [--json-out FILE]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <vector>

#include "base/clock.h"
#include "base/rng.h"
#include "engine/engine.h"
#include "engine/event_collector.h"
#include "io/json.h"

namespace {

struct PhaseResult {
  double wall_s = 0;
  int64_t out_tokens = 0;
  std::vector<double> ttft_s, e2e_s;
  double tok_s() const { return static_cast<double>(out_tokens) / wall_s; }
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double idx = p / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(idx);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (idx - static_cast<double>(lo));
}

PhaseResult run_phase(dss::Engine& e, const std::vector<std::vector<dss::TokenId>>& prompts,
                      int out_len, bool concurrent) {
  dss::EventCollector col;
  std::vector<dss::RequestId> ids;
  PhaseResult r;
  const double t0 = dss::now_seconds();
  for (size_t i = 0; i < prompts.size(); ++i) {
    dss::GenerateRequest req;
    req.prompt = prompts[i];
    req.params.temperature = 0.0f;
    req.params.max_tokens = out_len;
    req.params.ignore_eos = true;
    auto id = e.submit(req, col.sink());
    if (!id) {
      std::fprintf(stderr, "engine_bench: %s\n", id.message().c_str());
      std::exit(1);
    }
    ids.push_back(*id);
    if (!concurrent) col.wait_done(static_cast<int>(i + 1));
  }
  col.wait_done(static_cast<int>(prompts.size()));
  r.wall_s = dss::now_seconds() - t0;
  for (auto id : ids) {
    const auto o = col.get(id);
    r.out_tokens += static_cast<int64_t>(o.tokens.size());
    r.ttft_s.push_back(o.t_first_token - o.last.t_arrival);
    r.e2e_s.push_back(o.last.t_event - o.last.t_arrival);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dsserve in-process engine benchmark: concurrent vs one-at-a-time"};
  dss::EngineOptions o;
  int n_req = 16, in_len = 256, out_len = 128;
  std::string json_out;
  uint64_t seed = 1;
  app.add_option("--model", o.model_dir, "Checkpoint directory")->required();
  app.add_option("--requests", n_req, "Number of requests")->capture_default_str();
  app.add_option("--input-len", in_len, "Prompt tokens per request")->capture_default_str();
  app.add_option("--output-len", out_len, "New tokens per request")->capture_default_str();
  app.add_option("--threads", o.n_threads, "Compute threads (0: all)")->capture_default_str();
  std::string matmul_dtype = "auto";  // as `dsserve serve`
  app.add_option("--matmul-dtype", matmul_dtype,
                 "Arithmetic of the tiled FP8 / BF16 linear layers: f32 | bf16 | auto (bf16 where "
                 "the CPU has AVX512-BF16), as `dsserve serve --matmul-dtype`")
      ->check(CLI::IsMember({"f32", "bf16", "auto"}))
      ->capture_default_str();
  app.add_option("--seed", seed, "Prompt seed")->capture_default_str();
  app.add_option("--json-out", json_out, "Write the results as JSON");
  CLI11_PARSE(app, argc, argv);
  o.matmul_dtype = dss::parse_matmul_dtype(matmul_dtype).value();  // checked by IsMember above
  o.enable_prefix_cache = false;
  o.max_running_requests = std::max(n_req, 1);
  o.context_length = in_len + out_len + 1;
  o.chunked_prefill_size = std::max(2048, n_req);
  auto e = dss::Engine::create(o);
  if (!e) {
    std::fprintf(stderr, "engine_bench: %s\n", e.message().c_str());
    return 1;
  }
  const int32_t V = (*e)->model_config().n_vocab;
  dss::Rng rng(seed);
  std::vector<std::vector<dss::TokenId>> prompts(static_cast<size_t>(n_req));
  for (auto& p : prompts) {
    p.resize(static_cast<size_t>(in_len));
    for (auto& t : p)
      t = static_cast<dss::TokenId>(rng.next_u64() % static_cast<uint64_t>(std::min(V, 128000)));
  }
  std::fprintf(stderr, "engine_bench: %d requests x (%d in, %d out), %s, --matmul-dtype %s\n",
               n_req, in_len, out_len, o.model_dir.c_str(), matmul_dtype.c_str());
  const PhaseResult conc = run_phase(**e, prompts, out_len, true);
  std::fprintf(stderr, "  concurrent:    %.1f s, %.2f output tok/s\n", conc.wall_s, conc.tok_s());
  const PhaseResult seq = run_phase(**e, prompts, out_len, false);
  std::fprintf(stderr, "  one at a time: %.1f s, %.2f output tok/s\n", seq.wall_s, seq.tok_s());
  dss::OrderedJson j;
  j["model"] = o.model_dir;
  j["requests"] = n_req;
  j["input_len"] = in_len;
  j["output_len"] = out_len;
  j["matmul_dtype"] = matmul_dtype;
  auto phase = [&](const PhaseResult& r) {
    return dss::OrderedJson{{"wall_s", r.wall_s},
                            {"output_tokens", r.out_tokens},
                            {"output_tok_s", r.tok_s()},
                            {"ttft_p50_s", percentile(r.ttft_s, 50)},
                            {"ttft_p99_s", percentile(r.ttft_s, 99)},
                            {"e2e_p50_s", percentile(r.e2e_s, 50)},
                            {"e2e_p99_s", percentile(r.e2e_s, 99)}};
  };
  j["concurrent"] = phase(conc);
  j["one_at_a_time"] = phase(seq);
  j["throughput_ratio"] = conc.tok_s() / seq.tok_s();
  std::printf("%s\n", j.dump(2).c_str());
  if (!json_out.empty()) std::ofstream(json_out) << j.dump(2) << "\n";
  return 0;
}
