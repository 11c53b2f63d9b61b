// Grid expansion and the recommendation rule of `dsserve tune` (apps/bench/tune_*.h).
#include <gtest/gtest.h>

#include "apps/bench/tune_grid.h"
#include "apps/bench/tune_report.h"

namespace dss::bench {
namespace {

TEST(TuneGrid, CartesianProductFirstAxisSlowest) {
  auto g = expand_grid({"max-running-requests=1,2", "--chunked-prefill-size=256,512"});
  ASSERT_TRUE(g.is_ok());
  ASSERT_EQ(g->size(), 4u);
  EXPECT_EQ((*g)[1].label(), "max-running-requests=1 chunked-prefill-size=512");
  EXPECT_EQ((*g)[2].server_flags_text(), "--max-running-requests 2 --chunked-prefill-size 256");
  auto c = expand_grid({"max-concurrency=4"});
  EXPECT_TRUE((*c)[0].server_flags().empty());  // client-side key
  EXPECT_FALSE(expand_grid({"max-running-requests"}).is_ok());
  EXPECT_FALSE(expand_grid({"x=1,,2"}).is_ok());
  EXPECT_EQ(expand_grid({}).value().size(), 1u);
}

TunePoint pt(const char* label, double tput, double p99_ttft, double p99_tpot) {
  TunePoint p;
  p.label = label;
  p.completed = 8;
  p.output_throughput = tput;
  p.p99_ttft_ms = p99_ttft;
  p.p99_tpot_ms = p99_tpot;
  return p;
}

TEST(TuneReport, RecommendsFastestMeetingTheSlo) {
  Slo slo;
  slo.ttft_ms = 1000;
  slo.tpot_ms = 100;
  std::vector<TunePoint> pts = {pt("a", 10, 900, 50), pt("b", 30, 950, 90), pt("c", 50, 800, 150)};
  auto r = recommend(pts, slo);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->index, 1u);  // c is faster but breaks TPOT
  EXPECT_TRUE(r->meets_slo);
  pts[1].failed = 1;  // a failure disqualifies
  EXPECT_EQ(recommend(pts, slo)->index, 0u);
}

TEST(TuneReport, ClosestWhenNoneMeets) {
  Slo slo;
  slo.ttft_ms = 100;
  slo.tpot_ms = 10;
  // worst ratios: a max(3, 1.5) = 3; b max(1.2, 2) = 2; c max(5, 1.1) = 5 -> b.
  std::vector<TunePoint> pts = {pt("a", 10, 300, 15), pt("b", 20, 120, 20), pt("c", 30, 500, 11)};
  auto r = recommend(pts, slo);
  EXPECT_EQ(r->index, 1u);
  EXPECT_FALSE(r->meets_slo);
  const std::string svg = tune_svg(pts, slo, r, "t <&>");
  EXPECT_NE(svg.find("t &lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(tune_table(pts, r).find("| * | b |") != std::string::npos, true);
}

}  // namespace
}  // namespace dss::bench
