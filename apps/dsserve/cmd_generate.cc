// `dsserve generate`: drive the engine from the command line. Requests from --prompt or a JSONL
// file are submitted together; one JSON line per request is printed, in input order.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include "apps/dsserve/commands.h"
#include "apps/dsserve/dp_batch.h"
#include "apps/dsserve/engine_flags.h"
#include "apps/dsserve/parallel_flags.h"
#include "base/clock.h"
#include "engine/engine.h"
#include "server/batch_generate.h"
#include "text/tokenizer.h"

namespace dss::app {

namespace {

struct GenerateArgs {
  EngineOptions engine;
  ParallelArgs parallel;
  std::string prompt;
  std::string requests_file;
  SamplingParams defaults;
  bool show_events = false;
};

// The requests of --prompt or --requests; false after printing the error (exit code 2).
bool read_requests(const GenerateArgs& a, const PromptEncoder& encode,
                   std::vector<BatchRequest>& out) {
  if (!a.prompt.empty()) {
    auto ids = encode(a.prompt);
    if (!ids) {
      std::fprintf(stderr, "dsserve generate: --prompt: %s\n", ids.message().c_str());
      return false;
    }
    out.push_back(BatchRequest{*ids, a.defaults});
    return true;
  }
  std::ifstream in(a.requests_file);
  if (!in) {
    std::fprintf(stderr, "dsserve generate: %s: cannot open\n", a.requests_file.c_str());
    return false;
  }
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Result<BatchRequest> r = parse_batch_request(line, a.defaults, encode);
    if (!r) {
      std::fprintf(stderr, "dsserve generate: %s:%d: %s\n", a.requests_file.c_str(), n,
                   r.message().c_str());
      return false;
    }
    out.push_back(std::move(r).value());
  }
  return true;
}

int run_generate(GenerateArgs& a) {
  if (a.prompt.empty() == a.requests_file.empty()) {
    std::fprintf(stderr, "dsserve generate: give exactly one of --prompt or --requests\n");
    return 2;
  }
  std::optional<Tokenizer> tok;
  if (std::ifstream probe(a.engine.model_dir + "/tokenizer.json"); probe) {
    auto t = Tokenizer::load_dir(a.engine.model_dir);
    if (!t) {
      std::fprintf(stderr, "dsserve generate: %s\n", t.message().c_str());
      return 1;
    }
    tok = std::move(*t);
  }
  const PromptEncoder encode = [&](const std::string& text) -> Result<std::vector<TokenId>> {
    if (!tok)
      return Status::error(
          "the model directory has no tokenizer.json: give prompt_ids instead of text");
    return tok->encode(text, EncodeOptions{tok->add_bos_default(), true});
  };
  std::vector<BatchRequest> requests;
  if (!read_requests(a, encode, requests)) return 2;
  Result<ParallelRun> par = start_parallel(a.parallel, /*allow_replicas=*/true);
  if (!par) {
    std::fprintf(stderr, "dsserve generate: %s\n", par.message().c_str());
    return 2;
  }
  a.engine.expert_parallel = a.parallel.ep_size > 1;
  a.engine.dist_timeout_s = a.parallel.dist_timeout_s;
  auto engine = Engine::create(a.engine, par->tp_group(), par->dp_attention_group());
  if (!engine) {
    std::fprintf(stderr, "dsserve generate: %s\n", engine.message().c_str());
    return 1;
  }
  if (!par->is_leader()) {  // a replica's leader drives its engine; this rank runs its steps
    (*engine)->follow();
    return 0;
  }
  const double t_start = now_seconds();
  // Data-parallel replicas: this replica's share of the requests (dp_batch.h).
  std::vector<size_t> share(requests.size());
  for (size_t i = 0; i < share.size(); ++i) share[i] = i;
  if (par->dp_size > 1)
    share = replica_share(requests, par->dp_size, par->replica(), a.engine.page_size);
  std::vector<BatchRequest> mine;
  for (size_t i : share) mine.push_back(requests[i]);
  const std::vector<BatchResult> results = run_batch(**engine, tok ? &*tok : nullptr, mine);
  std::vector<std::pair<size_t, std::string>> lines;
  for (size_t k = 0; k < results.size(); ++k) {
    const size_t i = share[k];
    lines.emplace_back(i, batch_result_json(i, requests[i], results[k], tok.has_value()).dump());
  }
  const EngineStats st = (*engine)->stats();
  // Before the leaders' collectives: under DP attention the engine thread steps in lockstep
  // over the world until every rank's engine has stopped (MPI runs one thread at a time here).
  (*engine)->shutdown();
  std::vector<int64_t> totals = {st.prompt_tokens_computed, st.generation_tokens,
                                 st.prefix_hit_tokens,      st.steps,
                                 st.spec.draft_tokens,      st.spec.accepted_tokens};
  std::vector<std::string> out;
  if (par->leaders) {
    out = gather_lines(*par->leaders, lines, requests.size());
    totals = sum_to_leader0(*par->leaders, totals);
    if (par->rank() != 0) return 0;  // world rank 0 prints
  } else {
    for (auto& [i, line] : lines) out.push_back(std::move(line));
  }
  for (const std::string& line : out) std::cout << line << "\n";  // input order
  std::fprintf(stderr,
               "generate: %zu requests in %.3f s on %d replica(s); %lld prompt tokens computed, "
               "%lld generated, %lld prefix-cache hit tokens, %lld steps\n",
               requests.size(), now_seconds() - t_start, par->dp_size,
               static_cast<long long>(totals[0]), static_cast<long long>(totals[1]),
               static_cast<long long>(totals[2]), static_cast<long long>(totals[3]));
  if (st.spec_num_steps > 0) {
    std::fprintf(stderr,
                 "generate: speculative decoding: %lld draft tokens verified, %lld accepted\n",
                 static_cast<long long>(totals[4]), static_cast<long long>(totals[5]));
  }
  return 0;
}

}  // namespace

void register_generate_command(CLI::App& app) {
  auto* a = &command_options<GenerateArgs>();
  a->defaults.max_tokens = 64;
  auto* cmd = app.add_subcommand(
      "generate", "Generate from prompts through the batching engine (one JSON line per request)");
  add_engine_flags(cmd, a->engine, /*model_required=*/true);
  add_parallel_flags(cmd, a->parallel);
  cmd->add_option("--prompt", a->prompt, "Prompt text (encoded with the model's tokenizer)");
  cmd->add_option("--requests", a->requests_file,
                  "JSONL file: one request per line, {\"prompt_ids\": [...]} or {\"prompt\": "
                  "\"...\"} plus sampling fields "
                  "(max_tokens, temperature, top_p, top_k, min_p, seed, stop, stop_token_ids, "
                  "ignore_eos, min_tokens, "
                  "repetition_penalty, frequency_penalty, presence_penalty, logprobs)");
  cmd->add_option("--max-tokens", a->defaults.max_tokens, "Default max_tokens")
      ->capture_default_str();
  cmd->add_option("--temperature", a->defaults.temperature, "Default temperature (0 = greedy)")
      ->capture_default_str();
  cmd->add_option("--top-p", a->defaults.top_p, "Default top_p")->capture_default_str();
  cmd->add_option("--top-k", a->defaults.top_k, "Default top_k (0 = off)")->capture_default_str();
  cmd->add_flag("--ignore-eos", a->defaults.ignore_eos, "Do not stop at EOS");
  cmd->callback([a] { exit_code = run_generate(*a); });
}

}  // namespace dss::app
