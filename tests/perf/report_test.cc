// The arithmetic of bench-model's report, on values worked out by hand: llama-bench's mean and
// sample standard deviation, the per-repetition roofline percentage, measured phases beside
// their bound, and the option checks.
#include <gtest/gtest.h>

#include <cmath>

#include "perf/bench_model_options.h"
#include "perf/phase_report.h"
#include "perf/roofline.h"
#include "perf/stats.h"

namespace dss::perf {
namespace {

// {2, 4, 9}: mean 5; squared deviations 9 + 1 + 16 = 26, / (3 - 1) = 13.
TEST(Stats, MeanAndSampleStddev) {
  const Stat s = stat_of({2, 4, 9});
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(13.0));
  const Stat one = stat_of({7});
  EXPECT_DOUBLE_EQ(one.mean, 7);
  EXPECT_DOUBLE_EQ(one.stddev, 0);
}

// 1e9 bytes per token: repetition 0 (10 tok/s, samples 20 and 25 GB/s) -> 10 / 25 = 40%;
// repetition 1 (8 tok/s, samples 25 and 16 GB/s) -> 8 / 25 = 32%.
TEST(Roofline, EachRepetitionAgainstTheHigherSampleAroundIt) {
  const std::vector<double> pct = paired_roofline_pct({10, 8}, {20, 25, 16}, 1'000'000'000);
  ASSERT_EQ(pct.size(), 2u);
  EXPECT_DOUBLE_EQ(pct[0], 40);
  EXPECT_DOUBLE_EQ(pct[1], 32);
}

// mla = attention + indexer: max(1, 2) + max(0.5, 0.25) s = 2.5 s; moe.experts = 3 s; the
// forward's bound is the whole step's (6 s); lm_head was not measured, so it is not reported.
TEST(PhaseReport, MeasuredPhasesBesideTheirBound) {
  StepBound b;
  b.phases = {{"attention", 0, 0, 1.0, 2.0},
              {"indexer", 0, 0, 0.5, 0.25},
              {"experts", 0, 0, 3.0, 1.0},
              {"lm_head", 0, 0, 0.5, 0.1}};
  b.seconds = 6;
  OrderedJson measured;
  measured["forward"] = {{"ms", 9000.0}, {"calls", 1.0}};
  measured["mla"] = {{"ms", 4000.0}, {"calls", 2.0}};
  measured["moe.experts"] = {{"ms", 3500.0}, {"calls", 2.0}};
  const OrderedJson o = phases_vs_bound(measured, b);
  EXPECT_DOUBLE_EQ(o["mla"]["ms"].get<double>(), 4000);
  EXPECT_DOUBLE_EQ(o["mla"]["bound_ms"].get<double>(), 2500);
  EXPECT_DOUBLE_EQ(o["moe.experts"]["bound_ms"].get<double>(), 3000);
  EXPECT_DOUBLE_EQ(o["forward"]["bound_ms"].get<double>(), 6000);
  EXPECT_FALSE(o.contains("lm_head"));
  EXPECT_TRUE(phases_vs_bound(OrderedJson::object(), b).empty());
  EXPECT_EQ(tg_phase_key(128, 4), "tg128_bs4");
}

TEST(BenchModelOptions, ValidateNamesTheFlag) {
  BenchModelOptions a;
  EXPECT_TRUE(validate(a).is_ok());
  a.prefill.clear();
  EXPECT_EQ(validate(a).message(), "--prefill: at least one length");
  a = {};
  a.decode_batch = {1, 0};
  EXPECT_EQ(validate(a).message(), "--decode-batch: 0 is not a positive length");
  a = {};
  a.repetitions = 0;
  EXPECT_EQ(validate(a).message(), "--repetitions must be >= 1");
  a = {};
  a.ab_variants = 9;
  EXPECT_FALSE(validate(a).is_ok());
}

}  // namespace
}  // namespace dss::perf
