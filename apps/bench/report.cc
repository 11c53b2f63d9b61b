#include "apps/bench/report.h"

#include <cmath>
#include <string>

#include "base/str_cat.h"

namespace dss::bench {

namespace {

struct Named {
  const char* key;    // ttft
  const char* label;  // TTFT
  const char* header;
  const Distribution* d;
};

std::string pct_word(double p) {  // 99 -> "99", 99.9 -> "99.9" (vLLM's key spelling)
  return p == std::floor(p) ? std::to_string(static_cast<int64_t>(p)) : str_cat(p);
}

std::vector<Named> named(const BenchMetrics& m) {
  return {{"ttft", "TTFT", "Time to First Token", &m.ttft},
          {"tpot", "TPOT", "Time per Output Token (excl. 1st token)", &m.tpot},
          {"itl", "ITL", "Inter-token Latency", &m.itl},
          {"e2el", "E2EL", "End-to-end Latency", &m.e2el}};
}

}  // namespace

void add_result_json(const RunResult& run, const BenchMetrics& m, bool has_slo, OrderedJson& out) {
  out["duration"] = run.duration_s;
  out["completed"] = m.completed;
  out["failed"] = m.failed;
  out["total_input_tokens"] = m.total_input;
  out["total_output_tokens"] = m.total_output;
  out["request_throughput"] = m.request_throughput;
  out["request_goodput"] = has_slo ? OrderedJson(m.request_goodput) : OrderedJson(nullptr);
  out["output_throughput"] = m.output_throughput;
  out["total_token_throughput"] = m.total_token_throughput;
  out["max_output_tokens_per_s"] = m.max_output_tokens_per_s;
  out["max_concurrent_requests"] = m.max_concurrent_requests;
  for (const Named& n : named(m)) {
    out[str_cat("mean_", n.key, "_ms")] = n.d->mean;
    out[str_cat("median_", n.key, "_ms")] = n.d->median;
    out[str_cat("std_", n.key, "_ms")] = n.d->std;
    for (const auto& [p, v] : n.d->percentiles)
      out[str_cat("p", pct_word(p), "_", n.key, "_ms")] = v;
  }
  OrderedJson input_lens = OrderedJson::array(), ttfts = OrderedJson::array(),
              itls = OrderedJson::array(), lat = OrderedJson::array(),
              starts = OrderedJson::array(), texts = OrderedJson::array(),
              errors = OrderedJson::array();
  const double t0 = run.records.empty() ? 0.0 : run.records[0].start_time;
  for (const RequestRecord& r : run.records) {
    input_lens.push_back(r.prompt_len);
    ttfts.push_back(r.ttft);
    itls.push_back(r.itl);
    lat.push_back(r.latency);
    starts.push_back(r.start_time - t0);
    texts.push_back(r.generated_text);
    errors.push_back(r.error);
  }
  out["input_lens"] = std::move(input_lens);
  out["output_lens"] = m.output_lens;
  out["ttfts"] = std::move(ttfts);
  out["itls"] = std::move(itls);
  out["latencies"] = std::move(lat);
  out["start_times"] = std::move(starts);
  out["generated_texts"] = std::move(texts);
  out["errors"] = std::move(errors);
}

void print_summary(std::FILE* f, const RunResult& run, const BenchMetrics& m, bool has_slo) {
  auto line = [&](const char* k, const std::string& v) {
    std::fprintf(f, "%-40s %s\n", k, v.c_str());
  };
  auto num = [](double v) {
    char b[64];
    std::snprintf(b, sizeof(b), "%.2f", v);
    return std::string(b);
  };
  std::fprintf(f, "============ Serving Benchmark Result ============\n");
  line("Successful requests:", std::to_string(m.completed));
  line("Failed requests:", std::to_string(m.failed));
  line("Benchmark duration (s):", num(run.duration_s));
  line("Total input tokens:", std::to_string(m.total_input));
  line("Total generated tokens:", std::to_string(m.total_output));
  line("Request throughput (req/s):", num(m.request_throughput));
  if (has_slo) line("Request goodput (req/s):", num(m.request_goodput));
  line("Output token throughput (tok/s):", num(m.output_throughput));
  line("Peak output token throughput (tok/s):", num(m.max_output_tokens_per_s));
  line("Peak concurrent requests:", std::to_string(m.max_concurrent_requests));
  line("Total token throughput (tok/s):", num(m.total_token_throughput));
  for (const Named& n : named(m)) {
    std::string h = str_cat(" ", n.header, " ");
    const size_t pad = h.size() < 50 ? 50 - h.size() : 0;
    std::fprintf(f, "%s%s%s\n", std::string(pad / 2, '-').c_str(), h.c_str(),
                 std::string(pad - pad / 2, '-').c_str());
    line(str_cat("Mean ", n.label, " (ms):").c_str(), num(n.d->mean));
    line(str_cat("Median ", n.label, " (ms):").c_str(), num(n.d->median));
    for (const auto& [p, v] : n.d->percentiles)
      line(str_cat("P", pct_word(p), " ", n.label, " (ms):").c_str(), num(v));
  }
  std::fprintf(f, "==================================================\n");
  int shown = 0;
  for (const RequestRecord& r : run.records)
    if (!r.success && shown++ < 5) std::fprintf(f, "error: %s\n", r.error.c_str());
}

}  // namespace dss::bench
