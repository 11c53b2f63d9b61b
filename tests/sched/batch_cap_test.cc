// BatchCapController as step timelines (rule 8): observations fed step by step, expected caps
// derived by hand from the policy stated in sched/batch_cap.h (arithmetic in the comments).
#include "sched/batch_cap.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace dss {
namespace {

BatchCapConfig tpot_cfg(double target, int32_t max_cap) {
  BatchCapConfig cfg;
  cfg.tpot_target_ms = target;
  cfg.max_cap = max_cap;
  cfg.window = 4;
  cfg.interval = 2;
  return cfg;
}

TEST(BatchCapTest, P99NearestRank) {
  std::deque<double> v;
  EXPECT_EQ(p99_nearest_rank(v), 0.0);
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(p99_nearest_rank(v), 99.0);  // rank ceil(0.99 * 100) = 99
  v.push_back(1000);                     // 101 samples: rank ceil(99.99) = 100 -> value 100
  EXPECT_EQ(p99_nearest_rank(v), 100.0);
  std::deque<double> w{5, 1, 3};
  EXPECT_EQ(p99_nearest_rank(w), 5.0);  // rank ceil(2.97) = 3 -> the maximum
}

TEST(BatchCapTest, OffByDefaultKeepsMax) {
  BatchCapController c(BatchCapConfig{});
  for (int i = 0; i < 100; ++i) c.on_step(1000.0, 8, 8, 10);
  EXPECT_EQ(c.cap(), 32);
  EXPECT_EQ(c.n_lowers(), 0);
}

TEST(BatchCapTest, SlowStartDoublesWithDemandUntilTheFirstLowering) {
  BatchCapController c(tpot_cfg(100.0, 16));
  EXPECT_EQ(c.cap(), 1);  // starts at min_cap
  c.on_step(30.0, 1, 1, 20);
  EXPECT_EQ(c.cap(), 1);  // one sample: no decision before `interval` (2)
  c.on_step(30.0, 1, 1, 20);
  EXPECT_EQ(c.cap(), 2);  // P99 30 < 80 (0.8 x target), batch at cap, requests waiting: x2
  c.on_step(40.0, 2, 2, 20);
  c.on_step(40.0, 2, 2, 20);
  EXPECT_EQ(c.cap(), 4);
  c.on_step(60.0, 4, 4, 20);
  c.on_step(60.0, 4, 4, 20);
  EXPECT_EQ(c.cap(), 8);
  c.on_step(160.0, 8, 8, 20);
  c.on_step(160.0, 8, 8, 20);  // over: floor(8 * 100 / 160) = 5
  EXPECT_EQ(c.cap(), 5);
  c.on_step(70.0, 5, 5, 20);
  c.on_step(70.0, 5, 5, 20);  // after a lowering: +1, not x2
  EXPECT_EQ(c.cap(), 6);
  EXPECT_EQ(c.n_raises(), 4);
  EXPECT_EQ(c.n_lowers(), 1);
}

TEST(BatchCapTest, LowersProportionallyFromTheRunningBatch) {
  BatchCapController c(tpot_cfg(100.0, 16));
  for (int i = 0; i < 4; ++i) c.on_step(10.0, 1 << i, 1 << i, 50);  // 1 -> 2 -> 4 (x2 twice)
  for (int i = 0; i < 4; ++i) c.on_step(10.0, 4 << (i / 2), 4 << (i / 2), 50);  // -> 8 -> 16
  ASSERT_EQ(c.cap(), 16);
  c.on_step(200.0, 16, 16, 5);
  c.on_step(200.0, 16, 16, 5);  // floor(16 * 100 / 200) = 8
  EXPECT_EQ(c.cap(), 8);
  c.on_step(200.0, 8, 8, 5);
  c.on_step(110.0, 8, 8, 5);  // P99 of {200, 110} = 200: floor(8 * 0.5) = 4
  EXPECT_EQ(c.cap(), 4);
  c.on_step(105.0, 4, 4, 5);
  c.on_step(105.0, 4, 4, 5);  // floor(4 * 100 / 105) = 3 = base - 1
  EXPECT_EQ(c.cap(), 3);
  c.on_step(101.0, 3, 3, 5);
  c.on_step(101.0, 3, 3, 5);  // floor(2.97) = 2: at least one less
  EXPECT_EQ(c.cap(), 2);
  c.on_step(900.0, 2, 2, 5);
  c.on_step(900.0, 2, 2, 5);  // floor(2 * 100 / 900) = 0 -> clamped to min_cap 1
  EXPECT_EQ(c.cap(), 1);
  EXPECT_EQ(c.n_lowers(), 5);
}

TEST(BatchCapTest, BaseIsTheRunningBatchWhenItIsBelowTheCap) {
  BatchCapController c(tpot_cfg(50.0, 32));
  for (int i = 0; i < 10; ++i) c.on_step(10.0, c.cap(), c.cap(), 50);  // slow start to 32
  ASSERT_EQ(c.cap(), 32);
  c.on_step(80.0, 6, 6, 0);
  c.on_step(80.0, 6, 6, 0);  // base min(32, 6) = 6: floor(6 * 50 / 80) = 3
  EXPECT_EQ(c.cap(), 3);
}

TEST(BatchCapTest, PrefillOnlyStepsAreNotTpotSamples) {
  BatchCapController c(tpot_cfg(100.0, 8));
  for (int i = 0; i < 10; ++i) c.on_step(5000.0, 0, 4, 10);  // long prefills, nobody decoding
  EXPECT_EQ(c.cap(), 1);
  EXPECT_EQ(c.p99_tpot_ms(), 0.0);
  EXPECT_EQ(c.n_lowers() + c.n_raises(), 0);
}

TEST(BatchCapTest, RaisesOnlyWithDemandAndHeadroom) {
  BatchCapController c(tpot_cfg(100.0, 8));
  c.on_step(10.0, 1, 1, 9);
  c.on_step(10.0, 1, 1, 9);
  c.on_step(10.0, 2, 2, 9);
  c.on_step(10.0, 2, 2, 9);
  ASSERT_EQ(c.cap(), 4);
  c.on_step(150.0, 4, 4, 9);
  c.on_step(150.0, 4, 4, 9);
  ASSERT_EQ(c.cap(), 2);  // floor(4 * 100 / 150); slow start over
  // Fast steps but nobody waiting: no raise.
  for (int i = 0; i < 6; ++i) c.on_step(10.0, 2, 2, 0);
  EXPECT_EQ(c.cap(), 2);
  // Waiting requests but the batch below the cap: no raise either.
  for (int i = 0; i < 6; ++i) c.on_step(10.0, 1, 1, 3);
  EXPECT_EQ(c.cap(), 2);
  // Waiting requests and the batch at the cap, P99 90 ms: within target but above 0.8 x target.
  for (int i = 0; i < 6; ++i) c.on_step(90.0, 2, 2, 3);
  EXPECT_EQ(c.cap(), 2);
  // 70 ms < 80 ms: one +1 per decision, up to the configured maximum.
  for (int i = 0; i < 40; ++i) c.on_step(70.0, c.cap(), c.cap(), 3);
  EXPECT_EQ(c.cap(), 8);
  EXPECT_EQ(c.n_raises(), 2 + 6);
}

TEST(BatchCapTest, MissedTtftSpendsTpotHeadroom) {
  BatchCapConfig cfg = tpot_cfg(100.0, 8);
  cfg.ttft_target_ms = 1000.0;
  BatchCapController c(cfg);
  c.on_step(10.0, 1, 1, 9);
  c.on_step(10.0, 1, 1, 9);  // -> 2
  c.on_step(150.0, 2, 2, 9);
  c.on_step(150.0, 2, 2, 9);  // floor(2 * 100 / 150) = 1
  ASSERT_EQ(c.cap(), 1);
  c.on_first_token(500.0);  // TTFT within target: 90 ms steps do not raise (0.8 rule)
  for (int i = 0; i < 4; ++i) c.on_step(90.0, 1, 1, 3);
  EXPECT_EQ(c.cap(), 1);
  c.on_first_token(5000.0);  // P99 TTFT now 5 s > 1 s: headroom up to the TPOT target is spent
  c.on_step(90.0, 1, 1, 3);
  c.on_step(90.0, 1, 1, 3);
  EXPECT_EQ(c.cap(), 2);
}

// Closed loop: a fake model whose decode step takes 20 ms + 10 ms per running request, 30 clients
// always waiting, admission of up to 4 requests per step, requests finishing over time. With a
// 100 ms target the largest batch inside it is 8; the additive increase stops below 0.8 x target
// (6 requests: 80 ms). After warm-up the cap must stay between 5 and 9 and steps over the target
// must be rare.
TEST(BatchCapTest, ClosedLoopSettlesNearTheLargestBatchWithinTarget) {
  BatchCapConfig cfg;
  cfg.tpot_target_ms = 100.0;
  cfg.max_cap = 32;
  cfg.window = 8;
  cfg.interval = 4;
  BatchCapController c(cfg);
  int32_t running = 0;
  int over = 0, after_warmup = 0;
  int32_t lo = 1000, hi = 0;
  for (int step = 0; step < 2000; ++step) {
    running = std::min(c.cap(), running + 4);
    const double step_ms = 20.0 + 10.0 * running;
    c.on_step(step_ms, running, running, 30);
    if (c.cap() < running) running = std::max(c.cap(), running - 2);
    if (step >= 500) {
      ++after_warmup;
      if (step_ms > 100.0) ++over;
      lo = std::min(lo, c.cap());
      hi = std::max(hi, c.cap());
    }
  }
  EXPECT_GE(lo, 5);
  EXPECT_LE(hi, 9);
  EXPECT_LT(over, after_warmup / 5);  // over the target in under 20% of steps
}

}  // namespace
}  // namespace dss
