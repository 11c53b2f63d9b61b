// Metrics: the server's Prometheus exposition (text format 0.0.4) at GET /metrics.
// Names follow vLLM's with a `dsserve:` prefix. Counters and histograms are recorded by the
// route layer as requests finish; gauges are read from EngineStats at scrape time.
//   counters   dsserve:prompt_tokens_total, dsserve:generation_tokens_total,
//              dsserve:request_success_total{finished_reason}, dsserve:http_requests_total{status},
//              dsserve:prefix_cache_queries_total, dsserve:prefix_cache_hits_total (tokens),
//              dsserve:engine_busy_seconds_total, dsserve:num_preemptions_total
//   gauges     dsserve:num_requests_running, dsserve:num_requests_waiting,
//              dsserve:kv_cache_usage_perc (0..1), dsserve:kv_cache_num_pages,
//              dsserve:kv_cache_pages_{used,cached}, dsserve:prefix_cache_hit_ratio (0..1,
//              lifetime), dsserve:engine_busy_ratio (0..1, since the previous scrape),
//              dsserve:num_streams_open (HTTP requests in flight)
//   per rank   (tensor parallel; label rank, refreshed every kRankStatsEvery steps)
//              dsserve:rank_forwards_total, dsserve:rank_forward_seconds_total,
//              dsserve:rank_collective_seconds_total, dsserve:rank_collective_bytes_total,
//              dsserve:rank_kv_cache_pages_used
//   histograms dsserve:time_to_first_token_seconds, dsserve:inter_token_latency_seconds,
//              dsserve:e2e_request_latency_seconds, dsserve:request_queue_time_seconds
// Threading: every method is safe to call from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine_api.h"

namespace dss {

// Cumulative histogram with fixed upper bounds (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  // Appends the _bucket/_sum/_count lines of `name`.
  void render(const std::string& name, std::string& out) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // [bounds + 1] non-cumulative, last = +Inf
  double sum_ = 0.0;
  uint64_t n_ = 0;
};

class Metrics {
 public:
  Metrics();

  // One finished engine request: its tokens, finish reason name ("stop", "length", "abort",
  // "tool_calls", "error") and timings on the engine clock.
  void record_request(const std::string& finished_reason, int64_t n_prompt, int64_t n_generated,
                      double queue_s, double ttft_s, double e2e_s);
  void record_inter_token(double seconds) { itl_.observe(seconds); }
  void record_http_status(int status);
  void stream_opened() { ++n_open_; }
  void stream_closed() { --n_open_; }
  int64_t n_open() const { return n_open_.load(); }

  std::string render(const EngineStats& stats, double now_s);

 private:
  void render_gauges(const EngineStats& s, double now_s, std::string& out);
  void render_ranks(const EngineStats& s, std::string& out);
  void render_replicas(const EngineStats& s, std::string& out);
  void render_spec(const EngineStats& s, std::string& out);

  std::mutex mu_;
  int64_t prompt_tokens_ = 0, generation_tokens_ = 0;
  std::map<std::string, int64_t> finished_;
  std::map<int, int64_t> http_status_;
  double last_scrape_s_ = -1.0, last_busy_s_ = 0.0, start_s_ = 0.0;
  std::atomic<int64_t> n_open_{0};
  Histogram ttft_, itl_, e2e_, queue_;
};

}  // namespace dss
