// `dsserve generate`: drive the engine from the command line. Requests from --prompt or a JSONL
// file are submitted together; one JSON line per request is printed, in input order.
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>

#include "apps/dsserve/commands.h"
#include "apps/dsserve/engine_flags.h"
#include "base/clock.h"
#include "engine/engine.h"
#include "io/json.h"
#include "server/choice_stream.h"
#include "server/schemas.h"
#include "text/tokenizer.h"

namespace dss::app {

namespace {

struct GenerateArgs {
  EngineOptions engine;
  std::string prompt;
  std::string requests_file;
  SamplingParams defaults;
  bool show_events = false;
};

struct Job {
  std::vector<TokenId> prompt;
  SamplingParams params;
  RequestId id = 0;
  // Detokenizer + stop strings, the server's pipeline for /v1/completions (no hidden final
  // tokens: the text of an EOS or stop token id is shown unless skip_special_tokens hides it).
  std::optional<ChoiceStream> stream;
  std::string finish = "";
  TokenEvent last;
  double t_first = 0.0;
  bool done = false;
  std::string error;
};

// Prompt text -> token ids; an error without a tokenizer (prompt_ids still work).
using Encoder = std::function<Result<std::vector<TokenId>>(const std::string&)>;

// One JSONL request: {"prompt_ids": [...]} or {"prompt": "..."} plus the sampling fields of
// /v1/completions (server/schemas.h parse_sampling_params) over the command-line defaults.
Result<Job> parse_job(const std::string& line, const SamplingParams& defaults,
                      const Encoder& encode) {
  OrderedJson j = OrderedJson::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::error("not a JSON object");
  Job job;
  job.params = defaults;
  DSS_RETURN_IF_ERROR(parse_sampling_params(j, job.params));
  if (j.contains("prompt_ids")) {
    if (!j["prompt_ids"].is_array())
      return Status::error("prompt_ids: must be a list of token ids");
    for (const auto& t : j["prompt_ids"]) {
      if (!t.is_number_integer()) return Status::error("prompt_ids: must be a list of token ids");
      job.prompt.push_back(t.get<TokenId>());
    }
  } else if (j.contains("prompt") && j["prompt"].is_string()) {
    auto ids = encode(j["prompt"].get<std::string>());
    if (!ids) return Status::error("prompt: ", ids.message());
    job.prompt = *ids;
  } else {
    return Status::error("needs \"prompt_ids\" (list of ids) or \"prompt\" (text)");
  }
  return job;
}

// The jobs of --prompt or --requests; false after printing the error (exit code 2).
bool read_jobs(const GenerateArgs& a, const Encoder& encode, std::vector<Job>& jobs) {
  if (!a.prompt.empty()) {
    auto ids = encode(a.prompt);
    if (!ids) {
      std::fprintf(stderr, "dsserve generate: --prompt: %s\n", ids.message().c_str());
      return false;
    }
    jobs.push_back(Job{*ids, a.defaults});
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
    Result<Job> job = parse_job(line, a.defaults, encode);
    if (!job) {
      std::fprintf(stderr, "dsserve generate: %s:%d: %s\n", a.requests_file.c_str(), n,
                   job.message().c_str());
      return false;
    }
    jobs.push_back(std::move(job).value());
  }
  return true;
}

// Submits every job and consumes the events on this thread (detokenization and stop strings run
// here; a stop string cancels its engine request) until each job has its last event.
void run_jobs(Engine& engine, const Tokenizer* tok, std::vector<Job>& jobs) {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<TokenEvent> queue;
  auto sink = [&](TokenEvent&& e) {
    std::lock_guard<std::mutex> lk(mu);
    queue.push_back(std::move(e));
    cv.notify_one();
  };
  std::map<RequestId, size_t> by_id;
  size_t n_open = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job& job = jobs[i];
    auto id = engine.submit(GenerateRequest{job.prompt, job.params}, sink);
    if (!id) {
      job.error = id.message();
      job.done = true;
      continue;
    }
    job.id = *id;
    by_id[*id] = i;
    ++n_open;
    ChoiceStreamOptions so;
    so.chat = false;
    so.stop = job.params.stop;
    so.include_stop_str = job.params.include_stop_str_in_output;
    so.skip_special = job.params.skip_special_tokens;
    job.stream.emplace(tok, std::move(so));
  }
  while (n_open > 0) {
    TokenEvent e;
    {
      std::unique_lock<std::mutex> lk(mu);
      cv.wait(lk, [&] { return !queue.empty(); });
      e = std::move(queue.front());
      queue.pop_front();
    }
    Job& job = jobs[by_id.at(e.id)];
    if (job.done) continue;
    if (e.has_token) {
      if (job.stream->token_ids().empty()) job.t_first = e.t_event;
      ChoiceDelta d;
      job.stream->push_token(e, false, d);
      if (e.is_last() && !job.stream->stopped()) job.stream->finish(d);
      if (job.stream->stopped()) {  // the stop string ends the request here
        engine.cancel(job.id);
        job.finish = "stop";
        job.last = e;
        job.done = true;
        --n_open;
        continue;
      }
    }
    if (e.is_last()) {
      job.last = e;
      job.error = e.error;
      const char* names[] = {"none", "stop", "length", "abort"};
      job.finish = names[static_cast<int>(e.finish)];
      job.done = true;
      --n_open;
    }
  }
}

// One JSON line per job, in input order.
void print_jobs(const std::vector<Job>& jobs, bool with_text) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    OrderedJson o;
    o["index"] = i;
    if (!j.error.empty()) {
      o["error"] = j.error;
      std::cout << o.dump() << "\n";
      continue;
    }
    o["prompt_tokens"] = j.prompt.size();
    o["cached_tokens"] = j.last.n_cached_prompt;
    o["output_ids"] = j.stream->token_ids();
    if (with_text) o["text"] = j.stream->text();
    o["finish_reason"] = j.finish;
    o["queue_s"] = j.last.t_scheduled > 0 ? j.last.t_scheduled - j.last.t_arrival : 0.0;
    o["ttft_s"] = j.t_first > 0 ? j.t_first - j.last.t_arrival : 0.0;
    o["e2e_s"] = j.last.t_event - j.last.t_arrival;
    std::cout << o.dump() << "\n";
  }
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
  const Encoder encode = [&](const std::string& text) -> Result<std::vector<TokenId>> {
    if (!tok)
      return Status::error(
          "the model directory has no tokenizer.json: give prompt_ids instead of text");
    return tok->encode(text, EncodeOptions{tok->add_bos_default(), true});
  };
  std::vector<Job> jobs;
  if (!read_jobs(a, encode, jobs)) return 2;
  auto engine = Engine::create(a.engine);
  if (!engine) {
    std::fprintf(stderr, "dsserve generate: %s\n", engine.message().c_str());
    return 1;
  }
  const double t_start = now_seconds();
  run_jobs(**engine, tok ? &*tok : nullptr, jobs);
  print_jobs(jobs, tok.has_value());
  const EngineStats st = (*engine)->stats();
  std::fprintf(stderr,
               "generate: %zu requests in %.3f s; %lld prompt tokens computed, %lld generated, "
               "%lld prefix-cache hit tokens, %lld steps\n",
               jobs.size(), now_seconds() - t_start,
               static_cast<long long>(st.prompt_tokens_computed),
               static_cast<long long>(st.generation_tokens),
               static_cast<long long>(st.prefix_hit_tokens), static_cast<long long>(st.steps));
  return 0;
}

}  // namespace

void register_generate_command(CLI::App& app) {
  auto* a = &command_options<GenerateArgs>();
  a->defaults.max_tokens = 64;
  auto* cmd = app.add_subcommand(
      "generate", "Generate from prompts through the batching engine (one JSON line per request)");
  add_engine_flags(cmd, a->engine, /*model_required=*/true);
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
