#include "apps/bench/benchmark.h"

#include <ctime>

#include "apps/bench/arrivals.h"
#include "apps/bench/dataset.h"
#include "apps/bench/http_client.h"
#include "apps/bench/report.h"
#include "apps/bench/scenario.h"
#include "text/tokenizer.h"

namespace dss::bench {

namespace {

constexpr int32_t kProbeTokens = 8;
constexpr double kPercentiles[] = {90, 99};

Result<std::string> first_model(const ServerUrl& url) {
  DSS_ASSIGN_OR_RETURN(HttpResponse r, http_call(url, "/v1/models"));
  if (r.status != 200) return Status::error("GET /v1/models: HTTP ", r.status, ": ", r.body);
  Json j = Json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
      !j["data"][0].contains("id") || !j["data"][0]["id"].is_string())
    return Status::error("GET /v1/models: no model id in ", r.body);
  return j["data"][0]["id"].get<std::string>();
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof(b), "%Y%m%d-%H%M%S", std::gmtime(&t));
  return b;
}

// The workload after scenario defaults and overrides.
struct Workload {
  int32_t input_len = 0, output_len = 0;
  ApiEndpoint endpoint = ApiEndpoint::kChat;
};

Result<Workload> resolve_workload(const BenchOptions& o) {
  DSS_ASSIGN_OR_RETURN(Scenario sc, find_scenario(o.scenario));
  const std::optional<int32_t> in_len = o.input_len ? o.input_len : sc.input_len;
  const std::optional<int32_t> out_len = o.output_len ? o.output_len : sc.output_len;
  if (!in_len || !out_len)
    return Status::error("--scenario custom needs --input-len and --output-len");
  Workload w{*in_len, *out_len, sc.endpoint};
  if (o.endpoint) {
    if (*o.endpoint == "chat") {
      w.endpoint = ApiEndpoint::kChat;
    } else if (*o.endpoint == "completions") {
      w.endpoint = ApiEndpoint::kCompletions;
    } else {
      return Status::error("--endpoint: '", *o.endpoint, "' is not chat or completions");
    }
  }
  if (o.num_prompts < 1) return Status::error("--num-prompts must be at least 1");
  if (!(o.request_rate > 0)) return Status::error("--request-rate must be > 0 (or inf)");
  return w;
}

// Tokens of the unmeasured requests (probe + warmup), for reconciling server counters.
struct WarmupTotals {
  int64_t requests = 0, input_tokens = 0, output_tokens = 0;
  void add(const RequestRecord& r) {
    ++requests;
    input_tokens += r.prompt_len;
    output_tokens += r.output_tokens;
  }
};

// Sends the probe; returns the chat template overhead (0 for completions).
Result<int32_t> probe(const RunOptions& ro, const Tokenizer& tok, const WordVocab& vocab,
                      WarmupTotals& warm) {
  const PlannedRequest pr = probe_request(tok, vocab, kProbeTokens);
  const double at0[] = {0.0};
  DSS_ASSIGN_OR_RETURN(RunResult run, run_requests(ro, {&pr, 1}, at0));
  const RequestRecord& r = run.records[0];
  if (!r.success) return Status::error("probe request failed: ", r.error);
  warm.add(r);
  if (ro.endpoint != ApiEndpoint::kChat) return 0;
  return static_cast<int32_t>(std::max<int64_t>(r.prompt_len - kProbeTokens, 0));
}

Status warm_up(RunOptions ro, const BenchOptions& o, const PlannedRequest& first,
               WarmupTotals& warm) {
  if (o.warmup <= 0) return Status::ok();
  std::vector<PlannedRequest> w(static_cast<size_t>(o.warmup), first);
  std::vector<double> at(w.size(), 0.0);
  ro.label = o.label + " warmup";
  ro.progress = o.progress;
  DSS_ASSIGN_OR_RETURN(RunResult wr, run_requests(ro, w, at));
  for (const RequestRecord& r : wr.records) {
    if (!r.success) return Status::error("warmup request failed: ", r.error);
    warm.add(r);
  }
  return Status::ok();
}

// The run's configuration keys of the result JSON.
void add_config_json(const BenchOptions& o, const RunOptions& ro, const Workload& w,
                     int32_t overhead, const WarmupTotals& warm, OrderedJson& j) {
  j["date"] = utc_now();
  j["backend"] = w.endpoint == ApiEndpoint::kChat ? "openai-chat" : "openai";
  j["endpoint"] = endpoint_name(w.endpoint);
  j["base_url"] = o.base_url;
  j["model_id"] = ro.model;
  j["tokenizer_id"] = o.tokenizer_dir;
  j["scenario"] = o.scenario;
  j["input_len"] = w.input_len;
  j["output_len"] = w.output_len;
  j["range_ratio"] = o.range_ratio;
  j["shared_prefix_len"] = o.shared_prefix_len;
  j["num_prompts"] = o.num_prompts;
  j["request_rate"] = std::isinf(o.request_rate) ? OrderedJson("inf") : OrderedJson(o.request_rate);
  j["burstiness"] = 1.0;
  j["max_concurrency"] =
      o.max_concurrency > 0 ? OrderedJson(o.max_concurrency) : OrderedJson(nullptr);
  j["ignore_eos"] = o.ignore_eos;
  j["seed"] = o.seed;
  j["slo"] = slo_to_string(o.slo);
  j["chat_template_overhead"] = overhead;
  j["warmup"] = {{"requests", warm.requests},
                 {"input_tokens", warm.input_tokens},
                 {"output_tokens", warm.output_tokens}};
}

}  // namespace

Result<BenchOutcome> run_benchmark(const BenchOptions& o) {
  DSS_ASSIGN_OR_RETURN(ServerUrl url, parse_base_url(o.base_url));
  DSS_ASSIGN_OR_RETURN(Workload w, resolve_workload(o));
  RunOptions ro;
  ro.url = url;
  ro.endpoint = w.endpoint;
  ro.ignore_eos = o.ignore_eos;
  ro.max_concurrency = o.max_concurrency;
  ro.idle_timeout_s = o.idle_timeout_s;
  if (o.model.empty()) {
    DSS_ASSIGN_OR_RETURN(ro.model, first_model(url));
  } else {
    ro.model = o.model;
  }
  auto tok = Tokenizer::load_dir(o.tokenizer_dir);
  if (!tok) return tok.status().with_context("--tokenizer: ");
  DSS_ASSIGN_OR_RETURN(WordVocab vocab, WordVocab::from_tokenizer(*tok));

  WarmupTotals warm;
  DSS_ASSIGN_OR_RETURN(const int32_t overhead, probe(ro, *tok, vocab, warm));
  DatasetOptions d;
  d.n_requests = o.num_prompts;
  d.input_len = w.input_len;
  d.output_len = w.output_len;
  d.range_ratio = o.range_ratio;
  d.shared_prefix_len = o.shared_prefix_len;
  d.template_overhead = overhead;
  d.seed = o.seed;
  DSS_ASSIGN_OR_RETURN(std::vector<PlannedRequest> plan, build_requests(*tok, vocab, d));
  DSS_RETURN_IF_ERROR(warm_up(ro, o, plan[0], warm));

  const std::vector<double> arrivals = poisson_arrivals(o.num_prompts, o.request_rate, o.seed);
  ro.label = o.label;
  ro.progress = o.progress;
  BenchOutcome out;
  if (o.on_main_start) o.on_main_start();
  DSS_ASSIGN_OR_RETURN(out.run, run_requests(ro, plan, arrivals));
  if (o.on_main_end) o.on_main_end();
  out.metrics = compute_metrics(out.run.records, out.run.duration_s, o.slo, kPercentiles);
  add_config_json(o, ro, w, overhead, warm, out.json);
  add_result_json(out.run, out.metrics, !o.slo.empty(), out.json);
  return out;
}

}  // namespace dss::bench
