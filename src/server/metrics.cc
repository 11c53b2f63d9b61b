#include "server/metrics.h"

#include <algorithm>
#include <cstdio>

#include "base/clock.h"

namespace dss {

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void head(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string& out, const std::string& name, double v, const std::string& labels = "") {
  out += name + (labels.empty() ? "" : "{" + labels + "}") + " " + num(v) + "\n";
}

std::vector<double> latency_bounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2,  0.3,  0.4,
          0.5,   0.75,   1.0,   2.5,  5.0,   7.5,  10.0,  20.0, 40.0, 80.0, 160.0};
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  std::lock_guard<std::mutex> lk(mu_);
  ++counts_[i];
  sum_ += v;
  ++n_;
}

void Histogram::render(const std::string& name, std::string& out) const {
  std::lock_guard<std::mutex> lk(mu_);
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    sample(out, name + "_bucket", static_cast<double>(cum), "le=\"" + num(bounds_[i]) + "\"");
  }
  sample(out, name + "_bucket", static_cast<double>(n_), "le=\"+Inf\"");
  sample(out, name + "_sum", sum_);
  sample(out, name + "_count", static_cast<double>(n_));
}

Metrics::Metrics()
    : start_s_(now_seconds()),
      ttft_(latency_bounds()),
      itl_(latency_bounds()),
      e2e_(latency_bounds()),
      queue_(latency_bounds()) {
  for (const char* r : {"stop", "length", "abort", "tool_calls", "error"}) finished_[r] = 0;
}

void Metrics::record_request(const std::string& finished_reason, int64_t n_prompt,
                             int64_t n_generated, double queue_s, double ttft_s, double e2e_s) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    prompt_tokens_ += n_prompt;
    generation_tokens_ += n_generated;
    ++finished_[finished_reason];
  }
  queue_.observe(std::max(0.0, queue_s));
  if (ttft_s >= 0) ttft_.observe(ttft_s);
  e2e_.observe(std::max(0.0, e2e_s));
}

void Metrics::record_http_status(int status) {
  std::lock_guard<std::mutex> lk(mu_);
  ++http_status_[status];
}

std::string Metrics::render(const EngineStats& s, double now_s) {
  std::string out;
  out.reserve(8192);
  std::lock_guard<std::mutex> lk(mu_);
  const std::string p = "dsserve:";
  head(out, p + "prompt_tokens_total", "counter", "Prompt tokens of finished requests.");
  sample(out, p + "prompt_tokens_total", static_cast<double>(prompt_tokens_));
  head(out, p + "generation_tokens_total", "counter", "Generated tokens of finished requests.");
  sample(out, p + "generation_tokens_total", static_cast<double>(generation_tokens_));
  head(out, p + "request_success_total", "counter", "Finished engine requests by finish reason.");
  for (const auto& [reason, n] : finished_)
    sample(out, p + "request_success_total", static_cast<double>(n),
           "finished_reason=\"" + reason + "\"");
  head(out, p + "http_requests_total", "counter", "HTTP responses by status code.");
  for (const auto& [status, n] : http_status_)
    sample(out, p + "http_requests_total", static_cast<double>(n),
           "status=\"" + std::to_string(status) + "\"");
  head(out, p + "prefix_cache_queries_total", "counter",
       "Prompt tokens looked up in the prefix cache.");
  sample(out, p + "prefix_cache_queries_total", static_cast<double>(s.prefix_query_tokens));
  head(out, p + "prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.");
  sample(out, p + "prefix_cache_hits_total", static_cast<double>(s.prefix_hit_tokens));
  head(out, p + "engine_busy_seconds_total", "counter", "Seconds the engine spent in steps.");
  sample(out, p + "engine_busy_seconds_total", s.busy_seconds);
  head(out, p + "num_preemptions_total", "counter", "Requests preempted (recomputed later).");
  sample(out, p + "num_preemptions_total", static_cast<double>(s.preemptions));
  head(out, p + "grammar_masks_total", "counter",
       "Structured output: allowed-token masks computed (one per constrained row and step).");
  sample(out, p + "grammar_masks_total", static_cast<double>(s.grammar_masks));
  head(out, p + "grammar_mask_seconds_total", "counter",
       "Structured output: engine-thread seconds spent computing allowed-token masks.");
  sample(out, p + "grammar_mask_seconds_total", s.grammar_mask_seconds);

  head(out, p + "batch_cap_adjustments_total", "counter",
       "Dynamic batch cap decisions that changed the cap, by direction.");
  sample(out, p + "batch_cap_adjustments_total", static_cast<double>(s.batch_cap_lowers),
         "direction=\"lower\"");
  sample(out, p + "batch_cap_adjustments_total", static_cast<double>(s.batch_cap_raises),
         "direction=\"raise\"");

  render_gauges(s, now_s, out);
  if (!s.ranks.empty()) render_ranks(s, out);
  if (!s.replicas.empty()) render_replicas(s, out);
  if (s.spec_num_steps > 0) render_spec(s, out);

  head(out, p + "time_to_first_token_seconds", "histogram", "Arrival to first token.");
  ttft_.render(p + "time_to_first_token_seconds", out);
  head(out, p + "inter_token_latency_seconds", "histogram", "Time between consecutive tokens.");
  itl_.render(p + "inter_token_latency_seconds", out);
  head(out, p + "e2e_request_latency_seconds", "histogram", "Arrival to last token.");
  e2e_.render(p + "e2e_request_latency_seconds", out);
  head(out, p + "request_queue_time_seconds", "histogram", "Arrival to first scheduled.");
  queue_.render(p + "request_queue_time_seconds", out);
  return out;
}

// Speculative decoding (vLLM's spec_decode names): drafts, their tokens, the accepted ones (per
// position), and the acceptance length (1 + accepted drafts per verify step) as a histogram.
void Metrics::render_spec(const EngineStats& s, std::string& out) {
  const std::string p = "dsserve:spec_decode_";
  head(out, p + "num_drafts_total", "counter", "Decode steps that verified a draft.");
  sample(out, p + "num_drafts_total", static_cast<double>(s.spec.drafts));
  head(out, p + "num_draft_tokens_total", "counter", "Draft tokens verified.");
  sample(out, p + "num_draft_tokens_total", static_cast<double>(s.spec.draft_tokens));
  head(out, p + "num_accepted_tokens_total", "counter", "Draft tokens accepted.");
  sample(out, p + "num_accepted_tokens_total", static_cast<double>(s.spec.accepted_tokens));
  head(out, p + "num_accepted_tokens_per_pos_total", "counter",
       "Drafts whose token at this position (0 = first) was accepted.");
  for (int32_t k = 0; k < s.spec_num_steps; ++k) {
    const auto kk = static_cast<size_t>(k);
    sample(out, p + "num_accepted_tokens_per_pos_total",
           kk < s.spec.accepted_per_pos.size() ? static_cast<double>(s.spec.accepted_per_pos[kk])
                                               : 0.0,
           "position=\"" + std::to_string(k) + "\"");
  }
  head(out, p + "acceptance_length", "histogram",
       "Tokens a verify step produced (1 + its accepted draft tokens).");
  int64_t cumulative = 0, sum = 0;
  for (int32_t j = 0; j <= s.spec_num_steps; ++j) {
    const auto jj = static_cast<size_t>(j);
    const int64_t n = jj < s.spec.accepted_count.size() ? s.spec.accepted_count[jj] : 0;
    cumulative += n;
    sum += n * (j + 1);
    sample(out, p + "acceptance_length_bucket", static_cast<double>(cumulative),
           "le=\"" + std::to_string(j + 1) + "\"");
  }
  sample(out, p + "acceptance_length_bucket", static_cast<double>(cumulative), "le=\"+Inf\"");
  sample(out, p + "acceptance_length_sum", static_cast<double>(sum));
  sample(out, p + "acceptance_length_count", static_cast<double>(cumulative));
  head(out, p + "draft_seconds_total", "counter",
       "Wall seconds the drafter ran (the MTP module's forwards).");
  sample(out, p + "draft_seconds_total", s.spec_draft_seconds);
}

// Tensor parallel: one series per rank (label `rank`), as of the engine's last exchange.
// The data-parallel front's replicas (`replica` label): where requests went, what each holds.
void Metrics::render_replicas(const EngineStats& s, std::string& out) {
  const std::string p = "dsserve:dp_replica_";
  auto per_replica = [&](const std::string& name, const char* type, const char* help, auto value) {
    head(out, p + name, type, help);
    for (size_t r = 0; r < s.replicas.size(); ++r)
      sample(out, p + name, static_cast<double>(value(s.replicas[r])),
             "replica=\"" + std::to_string(r) + "\"");
  };
  per_replica("requests_routed_total", "counter", "Requests the front sent to this replica.",
              [](const ReplicaStats& r) { return r.routed; });
  per_replica("num_requests_running", "gauge", "Requests in this replica's running batch.",
              [](const ReplicaStats& r) { return r.n_running; });
  per_replica("num_requests_waiting", "gauge", "Requests waiting in this replica's queue.",
              [](const ReplicaStats& r) { return r.n_waiting; });
  per_replica("kv_pages_used", "gauge", "KV cache pages in use in this replica.",
              [](const ReplicaStats& r) { return r.kv_pages_used; });
  per_replica("generation_tokens_total", "counter", "Tokens this replica generated.",
              [](const ReplicaStats& r) { return r.generation_tokens; });
}

void Metrics::render_ranks(const EngineStats& s, std::string& out) {
  const std::string p = "dsserve:";
  auto per_rank = [&](const std::string& name, const char* type, const char* help, auto value) {
    head(out, p + name, type, help);
    for (size_t r = 0; r < s.ranks.size(); ++r)
      sample(out, p + name, static_cast<double>(value(s.ranks[r])),
             "rank=\"" + std::to_string(r) + "\"");
  };
  per_rank("rank_forwards_total", "counter", "Forward passes this rank ran (one per step).",
           [](const RankStats& r) { return r.forwards; });
  per_rank("rank_forward_seconds_total", "counter", "Wall seconds of this rank's forward passes.",
           [](const RankStats& r) { return r.forward_seconds; });
  per_rank("rank_collective_seconds_total", "counter",
           "Wall seconds this rank spent in the group's collectives (sums, logit gather).",
           [](const RankStats& r) { return r.collective_seconds; });
  per_rank("rank_collective_bytes_total", "counter",
           "Bytes this rank handed to the group's collectives.",
           [](const RankStats& r) { return r.collective_bytes; });
  // A group's rank 0 allocates the pages; every rank of a tensor-parallel group holds the same
  // pages of the (unsplit) latent cache. Behind the data-parallel front the ranks are listed
  // replica by replica (each replica's group alike; a DP-attention group is one rank), and
  // until every replica has reported its ranks the series is left out.
  const size_t n_rep = std::max<size_t>(s.replicas.size(), 1);
  if (s.ranks.size() % n_rep != 0) return;
  const size_t per_replica = s.ranks.size() / n_rep;
  head(out, p + "rank_kv_cache_pages_used", "gauge",
       "KV-cache pages in use on this rank (those of its tensor-parallel group or DP-attention "
       "group).");
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const int32_t used =
        s.replicas.empty() ? s.kv_pages_used : s.replicas[r / per_replica].kv_pages_used;
    sample(out, p + "rank_kv_cache_pages_used", used, "rank=\"" + std::to_string(r) + "\"");
  }
}

// Gauges read from EngineStats (and the busy ratio since the previous scrape); mu_ held.
void Metrics::render_gauges(const EngineStats& s, double now_s, std::string& out) {
  const std::string p = "dsserve:";
  head(out, p + "num_requests_running", "gauge", "Engine requests in the running batch.");
  sample(out, p + "num_requests_running", s.n_running);
  head(out, p + "num_requests_waiting", "gauge", "Engine requests waiting to be scheduled.");
  sample(out, p + "num_requests_waiting", s.n_waiting);
  head(out, p + "kv_cache_usage_perc", "gauge",
       "Fraction of KV-cache pages in use (1 = full), prefix-cache pages included.");
  sample(out, p + "kv_cache_usage_perc",
         s.kv_pages_total > 0 ? static_cast<double>(s.kv_pages_used) / s.kv_pages_total : 0.0);
  head(out, p + "kv_cache_num_pages", "gauge", "KV-cache pages in the pool.");
  sample(out, p + "kv_cache_num_pages", s.kv_pages_total);
  head(out, p + "kv_cache_pages_used", "gauge", "KV-cache pages not free.");
  sample(out, p + "kv_cache_pages_used", s.kv_pages_used);
  head(out, p + "kv_cache_pages_cached", "gauge",
       "KV-cache pages held by the prefix cache (reclaimable).");
  sample(out, p + "kv_cache_pages_cached", s.kv_pages_cached);
  head(out, p + "prefix_cache_hit_ratio", "gauge", "Prefix-cache hit tokens / query tokens.");
  sample(out, p + "prefix_cache_hit_ratio",
         s.prefix_query_tokens > 0
             ? static_cast<double>(s.prefix_hit_tokens) / s.prefix_query_tokens
             : 0.0);
  const double t0 = last_scrape_s_ < 0 ? start_s_ : last_scrape_s_;
  const double busy = now_s > t0 ? (s.busy_seconds - last_busy_s_) / (now_s - t0) : 0.0;
  last_scrape_s_ = now_s;
  last_busy_s_ = s.busy_seconds;
  head(out, p + "engine_busy_ratio", "gauge",
       "Fraction of wall time the engine spent in steps since the previous scrape.");
  sample(out, p + "engine_busy_ratio", std::clamp(busy, 0.0, 1.0));
  head(out, p + "batch_cap", "gauge",
       "Running-batch admission limit now (--max-running-requests, or the dynamic batch cap).");
  sample(out, p + "batch_cap", s.batch_cap);
  head(out, p + "batch_cap_p99_step_seconds", "gauge",
       "P99 decode-step time in the dynamic batch cap's current window (0 when off).");
  sample(out, p + "batch_cap_p99_step_seconds", s.batch_cap_p99_tpot_ms * 1e-3);
  head(out, p + "num_streams_open", "gauge", "HTTP generation requests in flight.");
  sample(out, p + "num_streams_open", static_cast<double>(n_open_.load()));
}

}  // namespace dss
