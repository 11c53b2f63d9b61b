// `dsserve generate`: drive the engine from the command line. Requests from --prompt or a JSONL
// file are submitted together; one JSON line per request is printed, in input order.
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>

#include "apps/dsserve/commands.h"
#include "apps/dsserve/engine_flags.h"
#include "base/clock.h"
#include "engine/engine.h"
#include "io/json.h"
#include "sample/stop_string_matcher.h"
#ifdef DSS_HAVE_TEXT
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#endif

namespace dss::app {

namespace {

struct GenerateArgs {
  EngineOptions engine;
  std::string prompt;
  std::string requests_file;
  SamplingParams defaults;
  bool show_events = false;
};

// Reads sampling fields of one request object over `p`; errors name the field.
Status parse_sampling(const Json& j, SamplingParams& p) {
  auto num = [&](const char* k, auto& out) -> Status {
    if (!j.contains(k) || j[k].is_null()) return Status::ok();
    if (!j[k].is_number()) return Status::error(k, ": must be a number");
    out = j[k].get<std::remove_reference_t<decltype(out)>>();
    return Status::ok();
  };
  DSS_RETURN_IF_ERROR(num("max_tokens", p.max_tokens));
  DSS_RETURN_IF_ERROR(num("min_tokens", p.min_tokens));
  DSS_RETURN_IF_ERROR(num("temperature", p.temperature));
  DSS_RETURN_IF_ERROR(num("top_p", p.top_p));
  DSS_RETURN_IF_ERROR(num("top_k", p.top_k));
  DSS_RETURN_IF_ERROR(num("min_p", p.min_p));
  DSS_RETURN_IF_ERROR(num("repetition_penalty", p.repetition_penalty));
  DSS_RETURN_IF_ERROR(num("frequency_penalty", p.frequency_penalty));
  DSS_RETURN_IF_ERROR(num("presence_penalty", p.presence_penalty));
  DSS_RETURN_IF_ERROR(num("logprobs", p.logprobs));
  if (j.contains("seed") && !j["seed"].is_null()) {
    if (!j["seed"].is_number_integer()) return Status::error("seed: must be an integer");
    p.seed = j["seed"].get<uint64_t>();
  }
  if (j.contains("ignore_eos")) {
    if (!j["ignore_eos"].is_boolean()) return Status::error("ignore_eos: must be true or false");
    p.ignore_eos = j["ignore_eos"].get<bool>();
  }
  if (j.contains("stop")) {
    if (j["stop"].is_string()) {
      p.stop = {j["stop"].get<std::string>()};
    } else if (j["stop"].is_array()) {
      for (const Json& s : j["stop"]) {
        if (!s.is_string()) return Status::error("stop: must be a string or a list of strings");
        p.stop.push_back(s.get<std::string>());
      }
    } else {
      return Status::error("stop: must be a string or a list of strings");
    }
  }
  if (j.contains("stop_token_ids")) {
    if (!j["stop_token_ids"].is_array())
      return Status::error("stop_token_ids: must be a list of token ids");
    for (const Json& s : j["stop_token_ids"]) {
      if (!s.is_number_integer())
        return Status::error("stop_token_ids: must be a list of token ids");
      p.stop_token_ids.push_back(s.get<TokenId>());
    }
  }
  return Status::ok();
}

struct Job {
  std::vector<TokenId> prompt;
  SamplingParams params;
  RequestId id = 0;
  std::vector<TokenId> out;
  std::string text;
  std::optional<StopStringMatcher> stop;
  std::string finish = "";
  TokenEvent last;
  double t_first = 0.0;
  bool done = false;
  std::string error;
#ifdef DSS_HAVE_TEXT
  std::optional<IncrementalDetokenizer> detok;
#endif
};

int run_generate(GenerateArgs& a) {
  if (a.prompt.empty() == a.requests_file.empty()) {
    std::fprintf(stderr, "dsserve generate: give exactly one of --prompt or --requests\n");
    return 2;
  }
#ifdef DSS_HAVE_TEXT
  std::optional<Tokenizer> tok;
  {
    std::ifstream probe(a.engine.model_dir + "/tokenizer.json");
    if (probe) {
      auto t = Tokenizer::load_dir(a.engine.model_dir);
      if (!t) {
        std::fprintf(stderr, "dsserve generate: %s\n", t.message().c_str());
        return 1;
      }
      tok = std::move(*t);
    }
  }
  auto encode = [&](const std::string& text) -> Result<std::vector<TokenId>> {
    if (!tok)
      return Status::error(
          "the model directory has no tokenizer.json: give prompt_ids instead of text");
    return tok->encode(text, EncodeOptions{tok->add_bos_default(), true});
  };
#else
  auto encode = [&](const std::string&) -> Result<std::vector<TokenId>> {
    return Status::error("built without the text layer: give prompt_ids instead of text");
  };
#endif
  std::vector<Job> jobs;
  if (!a.prompt.empty()) {
    auto ids = encode(a.prompt);
    if (!ids) {
      std::fprintf(stderr, "dsserve generate: --prompt: %s\n", ids.message().c_str());
      return 2;
    }
    jobs.push_back(Job{*ids, a.defaults});
  } else {
    std::ifstream in(a.requests_file);
    if (!in) {
      std::fprintf(stderr, "dsserve generate: %s: cannot open\n", a.requests_file.c_str());
      return 2;
    }
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      auto bad = [&](const std::string& why) {
        std::fprintf(stderr, "dsserve generate: %s:%d: %s\n", a.requests_file.c_str(), n,
                     why.c_str());
        return 2;
      };
      Json j = Json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
      Job job;
      job.params = a.defaults;
      if (Status s = parse_sampling(j, job.params); !s) return bad(s.message());
      if (j.contains("prompt_ids")) {
        if (!j["prompt_ids"].is_array()) return bad("prompt_ids: must be a list of token ids");
        for (const Json& t : j["prompt_ids"]) {
          if (!t.is_number_integer()) return bad("prompt_ids: must be a list of token ids");
          job.prompt.push_back(t.get<TokenId>());
        }
      } else if (j.contains("prompt") && j["prompt"].is_string()) {
        auto ids = encode(j["prompt"].get<std::string>());
        if (!ids) return bad("prompt: " + ids.message());
        job.prompt = *ids;
      } else {
        return bad("needs \"prompt_ids\" (list of ids) or \"prompt\" (text)");
      }
      jobs.push_back(std::move(job));
    }
  }
  auto engine = Engine::create(a.engine);
  if (!engine) {
    std::fprintf(stderr, "dsserve generate: %s\n", engine.message().c_str());
    return 1;
  }
  // Events go through a queue to this thread, which detokenizes and applies stop strings.
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
  const double t_start = now_seconds();
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job& job = jobs[i];
    auto id = (*engine)->submit(GenerateRequest{job.prompt, job.params}, sink);
    if (!id) {
      job.error = id.message();
      job.done = true;
      continue;
    }
    job.id = *id;
    by_id[*id] = i;
    ++n_open;
    if (!job.params.stop.empty())
      job.stop.emplace(job.params.stop, job.params.include_stop_str_in_output);
#ifdef DSS_HAVE_TEXT
    if (tok) job.detok.emplace(*tok, job.params.skip_special_tokens);
#endif
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
      if (job.out.empty()) job.t_first = e.t_event;
      job.out.push_back(e.token);
#ifdef DSS_HAVE_TEXT
      if (job.detok) {
        std::string delta = job.detok->push(e.token);
        if (e.is_last()) delta += job.detok->finish();
        if (job.stop) {
          const StopFeedResult r = job.stop->feed(delta);
          job.text += r.text;
          if (r.stopped) {  // the stop string ends the request here
            (*engine)->cancel(job.id);
            job.finish = "stop";
            job.last = e;
            job.done = true;
            --n_open;
            continue;
          }
          if (e.is_last()) job.text += job.stop->finish();
        } else {
          job.text += delta;
        }
      }
#endif
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
    o["output_ids"] = j.out;
#ifdef DSS_HAVE_TEXT
    if (j.detok) o["text"] = j.text;
#endif
    o["finish_reason"] = j.finish;
    o["queue_s"] = j.last.t_scheduled > 0 ? j.last.t_scheduled - j.last.t_arrival : 0.0;
    o["ttft_s"] = j.t_first > 0 ? j.t_first - j.last.t_arrival : 0.0;
    o["e2e_s"] = j.last.t_event - j.last.t_arrival;
    std::cout << o.dump() << "\n";
  }
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
