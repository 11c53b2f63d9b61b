#include "bench/benchmark.h"

#include <ctime>

#include "bench/arrivals.h"
#include "bench/dataset.h"
#include "bench/http_client.h"
#include "bench/report.h"
#include "bench/scenario.h"
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

}  // namespace

Result<BenchOutcome> run_benchmark(const BenchOptions& o) {
  DSS_ASSIGN_OR_RETURN(ServerUrl url, parse_base_url(o.base_url));
  DSS_ASSIGN_OR_RETURN(Scenario sc, find_scenario(o.scenario));
  const std::optional<int32_t> in_len = o.input_len ? o.input_len : sc.input_len;
  const std::optional<int32_t> out_len = o.output_len ? o.output_len : sc.output_len;
  if (!in_len || !out_len)
    return Status::error("--scenario custom needs --input-len and --output-len");
  ApiEndpoint ep = sc.endpoint;
  if (o.endpoint) {
    if (*o.endpoint == "chat") {
      ep = ApiEndpoint::kChat;
    } else if (*o.endpoint == "completions") {
      ep = ApiEndpoint::kCompletions;
    } else {
      return Status::error("--endpoint: '", *o.endpoint, "' is not chat or completions");
    }
  }
  if (o.num_prompts < 1) return Status::error("--num-prompts must be at least 1");
  if (!(o.request_rate > 0)) return Status::error("--request-rate must be > 0 (or inf)");

  RunOptions ro;
  ro.url = url;
  ro.endpoint = ep;
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

  // Probe: the server answers, and the chat template's size around a message.
  const PlannedRequest probe = probe_request(*tok, vocab, kProbeTokens);
  const double at0[] = {0.0};
  DSS_ASSIGN_OR_RETURN(RunResult probe_run, run_requests(ro, {&probe, 1}, at0));
  const RequestRecord& pr = probe_run.records[0];
  if (!pr.success) return Status::error("probe request failed: ", pr.error);
  const int32_t overhead =
      ep == ApiEndpoint::kChat
          ? static_cast<int32_t>(std::max<int64_t>(pr.prompt_len - kProbeTokens, 0))
          : 0;

  DatasetOptions d;
  d.n_requests = o.num_prompts;
  d.input_len = *in_len;
  d.output_len = *out_len;
  d.range_ratio = o.range_ratio;
  d.shared_prefix_len = o.shared_prefix_len;
  d.template_overhead = overhead;
  d.seed = o.seed;
  DSS_ASSIGN_OR_RETURN(std::vector<PlannedRequest> plan, build_requests(*tok, vocab, d));

  int64_t warm_in = pr.prompt_len, warm_out = pr.output_tokens, warm_n = 1;
  if (o.warmup > 0) {
    std::vector<PlannedRequest> w(static_cast<size_t>(o.warmup), plan[0]);
    std::vector<double> at(w.size(), 0.0);
    ro.label = o.label + " warmup";
    ro.progress = o.progress;
    DSS_ASSIGN_OR_RETURN(RunResult wr, run_requests(ro, w, at));
    for (const RequestRecord& r : wr.records) {
      if (!r.success) return Status::error("warmup request failed: ", r.error);
      warm_in += r.prompt_len;
      warm_out += r.output_tokens;
      ++warm_n;
    }
  }

  const std::vector<double> arrivals = poisson_arrivals(o.num_prompts, o.request_rate, o.seed);
  ro.label = o.label;
  ro.progress = o.progress;
  BenchOutcome out;
  if (o.on_main_start) o.on_main_start();
  DSS_ASSIGN_OR_RETURN(out.run, run_requests(ro, plan, arrivals));
  if (o.on_main_end) o.on_main_end();
  out.metrics = compute_metrics(out.run.records, out.run.duration_s, o.slo, kPercentiles);

  OrderedJson& j = out.json;
  j["date"] = utc_now();
  j["backend"] = "openai-chat";
  if (ep == ApiEndpoint::kCompletions) j["backend"] = "openai";
  j["endpoint"] = endpoint_name(ep);
  j["base_url"] = o.base_url;
  j["model_id"] = ro.model;
  j["tokenizer_id"] = o.tokenizer_dir;
  j["scenario"] = o.scenario;
  j["input_len"] = *in_len;
  j["output_len"] = *out_len;
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
  j["warmup"] = {{"requests", warm_n}, {"input_tokens", warm_in}, {"output_tokens", warm_out}};
  add_result_json(out.run, out.metrics, !o.slo.empty(), j);
  return out;
}

}  // namespace dss::bench
