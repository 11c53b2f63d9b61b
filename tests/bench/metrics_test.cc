// Metric math of `dsserve bench` on hand-built timelines; every expected value is worked out by
// hand in the comments (vLLM's definitions, apps/bench/metrics.h).
#include "apps/bench/metrics.h"

#include <gtest/gtest.h>

namespace dss::bench {
namespace {

RequestRecord rec(double start, double ttft, std::vector<double> itl, double latency, int64_t out,
                  int64_t in) {
  RequestRecord r;
  r.success = true;
  r.start_time = start;
  r.ttft = ttft;
  r.itl = std::move(itl);
  r.latency = latency;
  r.output_tokens = out;
  r.prompt_len = in;
  r.n_output_chunks = static_cast<int64_t>(r.itl.size()) + 1;
  return r;
}

// A: one token per chunk. Chunks at 0.10, 0.12, 0.15, 0.20; 4 tokens; TPOT (0.2-0.1)/3 = 33.33 ms.
// B: one output token (no TPOT; TPOT 0 for goodput). Chunk at 0.8.
// C: multi-token chunks: 3 chunks (1.2, 1.3, 1.4) carry 7 tokens, usage event at 1.5;
//    TPOT (0.5-0.2)/6 = 50 ms.
// D: failed: counted, never averaged (its huge times must not show anywhere).
std::vector<RequestRecord> timeline() {
  std::vector<RequestRecord> v = {
      rec(0.0, 0.1, {0.02, 0.03, 0.05}, 0.2, 4, 10), rec(0.5, 0.3, {}, 0.3, 1, 20),
      rec(1.0, 0.2, {0.1, 0.1}, 0.5, 7, 30), rec(0.0, 9.0, {5.0}, 9.5, 100, 40)};
  v[3].success = false;
  v[3].error = "HTTP status 500";
  return v;
}

const double kPs[] = {25, 90, 99};

TEST(BenchMetrics, CountsAndThroughputs) {
  const auto recs = timeline();
  const BenchMetrics m = compute_metrics(recs, 2.0, Slo{}, kPs);
  EXPECT_EQ(m.completed, 3);
  EXPECT_EQ(m.failed, 1);
  EXPECT_EQ(m.total_input, 10 + 20 + 30);
  EXPECT_EQ(m.total_output, 4 + 1 + 7);
  EXPECT_DOUBLE_EQ(m.request_throughput, 3 / 2.0);
  EXPECT_DOUBLE_EQ(m.output_throughput, 12 / 2.0);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, (60 + 12) / 2.0);
  EXPECT_EQ(m.output_lens, (std::vector<int64_t>{4, 1, 7, 0}));
  EXPECT_DOUBLE_EQ(m.request_goodput, 0);  // no SLO
}

TEST(BenchMetrics, TtftDistribution) {
  const auto recs = timeline();
  const BenchMetrics m = compute_metrics(recs, 2.0, Slo{}, kPs);
  // TTFT ms {100, 300, 200}: mean 200, median 200, population std sqrt((100^2+100^2+0)/3).
  EXPECT_NEAR(m.ttft.mean, 200, 1e-9);
  EXPECT_NEAR(m.ttft.median, 200, 1e-9);
  EXPECT_NEAR(m.ttft.std, 81.64965809277261, 1e-9);
  // sorted {100,200,300}: p25 rank 0.5 -> 150; p90 rank 1.8 -> 280; p99 rank 1.98 -> 298.
  ASSERT_EQ(m.ttft.percentiles.size(), 3u);
  EXPECT_NEAR(m.ttft.percentiles[0].second, 150, 1e-9);
  EXPECT_NEAR(m.ttft.percentiles[1].second, 280, 1e-9);
  EXPECT_NEAR(m.ttft.percentiles[2].second, 298, 1e-9);
}

TEST(BenchMetrics, TpotSkipsOneTokenRequestsAndUsesTokensNotChunks) {
  const auto recs = timeline();
  const BenchMetrics m = compute_metrics(recs, 2.0, Slo{}, kPs);
  // TPOT ms {33.33, 50} (B has none): mean 41.67; p90 rank 0.9 -> 33.33 + 0.9 * 16.67 = 48.33.
  EXPECT_NEAR(m.tpot.mean, (100.0 / 3 + 50) / 2, 1e-9);
  EXPECT_NEAR(m.tpot.median, (100.0 / 3 + 50) / 2, 1e-9);
  EXPECT_NEAR(m.tpot.percentiles[1].second, 100.0 / 3 + 0.9 * (50 - 100.0 / 3), 1e-9);
}

TEST(BenchMetrics, ItlPoolsEveryChunkGap) {
  const auto recs = timeline();
  const BenchMetrics m = compute_metrics(recs, 2.0, Slo{}, kPs);
  // ITL ms {20, 30, 50, 100, 100}: mean 60, median 50, p25 rank 1 -> 30, p90 rank 3.6 -> 100.
  EXPECT_NEAR(m.itl.mean, 60, 1e-9);
  EXPECT_NEAR(m.itl.median, 50, 1e-9);
  EXPECT_NEAR(m.itl.percentiles[0].second, 30, 1e-9);
  EXPECT_NEAR(m.itl.percentiles[1].second, 100, 1e-9);
  // E2E ms {200, 300, 500}: mean 333.33, median 300.
  EXPECT_NEAR(m.e2el.mean, 1000.0 / 3, 1e-9);
  EXPECT_NEAR(m.e2el.median, 300, 1e-9);
}

TEST(BenchMetrics, Goodput) {
  const auto recs = timeline();
  // ttft <= 250 and tpot <= 40: A (100, 33.3) yes; B (300) no; C (200, 50) no -> 1 / 2 s.
  Slo slo;
  slo.ttft_ms = 250;
  slo.tpot_ms = 40;
  EXPECT_DOUBLE_EQ(compute_metrics(recs, 2.0, slo, kPs).request_goodput, 0.5);
  // ttft <= 400, tpot <= 40: A yes, B yes (one token: TPOT 0), C no -> 2 / 2 s.
  slo.ttft_ms = 400;
  EXPECT_DOUBLE_EQ(compute_metrics(recs, 2.0, slo, kPs).request_goodput, 1.0);
}

TEST(BenchMetrics, PeakOutputAndConcurrency) {
  const auto recs = timeline();
  const BenchMetrics m = compute_metrics(recs, 2.0, Slo{}, kPs);
  // Buckets from t=0: second 0 holds A's 4 chunks + B's chunk (0.8) = 5; second 1 holds C's 3.
  EXPECT_DOUBLE_EQ(m.max_output_tokens_per_s, 5);
  // A [0,0.2), B [0.5,0.8), C [1.0,1.5): never two at once.
  EXPECT_EQ(m.max_concurrent_requests, 1);
  // [0,1), [0.5,1.5), [1,2): the first leaves as the third arrives -> peak 2.
  std::vector<RequestRecord> o = {rec(0, 0.1, {}, 1.0, 1, 1), rec(0.5, 0.1, {}, 1.0, 1, 1),
                                  rec(1.0, 0.1, {}, 1.0, 1, 1)};
  EXPECT_EQ(compute_metrics(o, 2.0, Slo{}, kPs).max_concurrent_requests, 2);
}

TEST(BenchMetrics, AllFailedGivesZeros) {
  auto recs = timeline();
  for (auto& r : recs) r.success = false;
  const BenchMetrics m = compute_metrics(recs, 1.0, Slo{}, kPs);
  EXPECT_EQ(m.completed, 0);
  EXPECT_EQ(m.failed, 4);
  EXPECT_EQ(m.total_output, 0);
  EXPECT_EQ(m.ttft.mean, 0);
  EXPECT_EQ(m.tpot.percentiles[2].second, 0);
  EXPECT_EQ(m.max_output_tokens_per_s, 0);
}

TEST(BenchMetrics, PercentileIsNumpyLinear) {
  // np.percentile([1, 2, 3, 4], 50) = 2.5; [5] -> 5; [10, 0] p10 -> rank 0.1 -> 1.
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({5}, 99), 5);
  EXPECT_DOUBLE_EQ(percentile({10, 0}, 10), 1);
  EXPECT_DOUBLE_EQ(percentile({}, 50), 0);
}

TEST(BenchSlo, Parse) {
  auto s = parse_slo("ttft:500,tpot:50.5");
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(*s->ttft_ms, 500);
  EXPECT_EQ(*s->tpot_ms, 50.5);
  EXPECT_FALSE(s->e2el_ms.has_value());
  EXPECT_EQ(slo_to_string(*s), "ttft:500,tpot:50.5");
  EXPECT_FALSE(parse_slo("ttft=5").is_ok());
  EXPECT_FALSE(parse_slo("ttft:-1").is_ok());
  EXPECT_FALSE(parse_slo("speed:3").is_ok());
  EXPECT_TRUE(parse_slo("").value().empty());
}

}  // namespace
}  // namespace dss::bench
