#include "apps/bench/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/check.h"

namespace dss::bench {

Distribution distribution_ms(std::span<const double> values_s, std::span<const double> ps) {
  Distribution d;
  std::vector<double> v(values_s.begin(), values_s.end());
  for (double& x : v) x *= 1000.0;
  if (!v.empty()) {
    const double n = static_cast<double>(v.size());
    d.mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
    double ss = 0;
    for (double x : v) ss += (x - d.mean) * (x - d.mean);
    d.std = std::sqrt(ss / n);
  }
  d.median = percentile(v, 50);
  for (double p : ps) d.percentiles.emplace_back(p, percentile(v, p));
  return d;
}

namespace {

// Peak of output chunks per 1-second bucket, buckets counted from the first send (vLLM).
double peak_output_per_second(std::span<const RequestRecord> ok) {
  if (ok.empty()) return 0;
  double t0 = ok[0].start_time, t1 = ok[0].start_time + ok[0].latency;
  for (const RequestRecord& r : ok) {
    t0 = std::min(t0, r.start_time);
    t1 = std::max(t1, r.start_time + r.latency);
  }
  const auto n_buckets = static_cast<size_t>(std::ceil(t1 - t0)) + 1;
  std::vector<double> per_second(n_buckets, 0.0);
  for (const RequestRecord& r : ok) {
    double t = r.start_time + r.ttft;
    auto add = [&](double at) {
      const double rel = at - t0;
      if (rel < 0) return;
      const auto b = static_cast<size_t>(rel);
      if (b < n_buckets) per_second[b] += 1;
    };
    add(t);
    for (double gap : r.itl) add(t += gap);
  }
  return *std::max_element(per_second.begin(), per_second.end());
}

// Peak number of requests in flight; intervals are [start, start + latency).
int64_t peak_concurrency(std::span<const RequestRecord> ok) {
  std::vector<std::pair<double, int>> events;
  for (const RequestRecord& r : ok) {
    events.emplace_back(r.start_time, +1);
    events.emplace_back(r.start_time + r.latency, -1);
  }
  std::sort(events.begin(), events.end());  // at equal times -1 sorts first: departures first
  int64_t now = 0, peak = 0;
  for (const auto& e : events) peak = std::max(peak, now += e.second);
  return peak;
}

}  // namespace

BenchMetrics compute_metrics(std::span<const RequestRecord> records, double duration_s,
                             const Slo& slo, std::span<const double> ps) {
  BenchMetrics m;
  std::vector<double> ttfts, tpots, itls, e2els;
  std::vector<RequestRecord> ok;
  int64_t good = 0;
  for (const RequestRecord& r : records) {
    if (!r.success) {
      ++m.failed;
      m.output_lens.push_back(0);
      continue;
    }
    ++m.completed;
    m.total_input += r.prompt_len;
    m.total_output += r.output_tokens;
    m.output_lens.push_back(r.output_tokens);
    double tpot = 0;  // requests with one output token count as TPOT 0 for goodput only
    if (r.output_tokens > 1) {
      tpot = (r.latency - r.ttft) / static_cast<double>(r.output_tokens - 1);
      tpots.push_back(tpot);
    }
    ttfts.push_back(r.ttft);
    e2els.push_back(r.latency);
    itls.insert(itls.end(), r.itl.begin(), r.itl.end());
    const bool meets = (!slo.ttft_ms || r.ttft * 1000.0 <= *slo.ttft_ms) &&
                       (!slo.tpot_ms || tpot * 1000.0 <= *slo.tpot_ms) &&
                       (!slo.e2el_ms || r.latency * 1000.0 <= *slo.e2el_ms);
    if (meets) ++good;
    ok.push_back(r);
  }
  DSS_CHECK(duration_s > 0, "duration_s=", duration_s);
  const double d = duration_s;
  m.request_throughput = static_cast<double>(m.completed) / d;
  m.request_goodput = slo.empty() ? 0.0 : static_cast<double>(good) / d;
  m.output_throughput = static_cast<double>(m.total_output) / d;
  m.total_token_throughput = static_cast<double>(m.total_input + m.total_output) / d;
  m.ttft = distribution_ms(ttfts, ps);
  m.tpot = distribution_ms(tpots, ps);
  m.itl = distribution_ms(itls, ps);
  m.e2el = distribution_ms(e2els, ps);
  m.max_output_tokens_per_s = peak_output_per_second(ok);
  m.max_concurrent_requests = peak_concurrency(ok);
  return m;
}

}  // namespace dss::bench
