// BatchCapController as step timelines (rule 8): a fake "model" whose step time grows with the
// batch, fed step by step; expected caps derived from the policy in sched/batch_cap.h.
#include "sched/batch_cap.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace dss {
namespace {

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

TEST(BatchCapTest, WaitsForAFullWindowThenLowersProportionally) {
  BatchCapConfig cfg;
  cfg.tpot_target_ms = 100.0;
  cfg.max_cap = 16;
  cfg.window = 4;
  cfg.interval = 2;
  BatchCapController c(cfg);
  // Steps of 200 ms with 16 running: over the target.
  c.on_step(200.0, 16, 16, 5);
  c.on_step(200.0, 16, 16, 5);  // interval reached but the window has 2 of 4
  EXPECT_EQ(c.cap(), 16);
  c.on_step(200.0, 16, 16, 5);
  c.on_step(200.0, 16, 16, 5);  // window full, interval reached: floor(16 * 100 / 200) = 8
  EXPECT_EQ(c.cap(), 8);
  EXPECT_EQ(c.n_lowers(), 1);
  // Window cleared after a change: the next decision needs 4 new samples.
  for (int i = 0; i < 3; ++i) c.on_step(200.0, 8, 8, 5);
  EXPECT_EQ(c.cap(), 8);
  c.on_step(110.0, 8, 8, 5);  // P99 = max(200, 200, 200, 110); floor(8 * 0.5) = 4
  EXPECT_EQ(c.cap(), 4);
  for (int i = 0; i < 4; ++i) c.on_step(105.0, 4, 4, 5);  // floor(4 * 100/105) = 3 = base - 1
  EXPECT_EQ(c.cap(), 3);
  for (int i = 0; i < 4; ++i) c.on_step(101.0, 3, 3, 5);  // floor(2.97) = 2: at least one less
  EXPECT_EQ(c.cap(), 2);
  EXPECT_EQ(c.n_lowers(), 4);
}

TEST(BatchCapTest, LowersFromTheRunningBatchWhenItIsBelowTheCap) {
  BatchCapConfig cfg;
  cfg.tpot_target_ms = 50.0;
  cfg.max_cap = 32;
  cfg.window = 2;
  cfg.interval = 2;
  BatchCapController c(cfg);
  c.on_step(80.0, 6, 6, 0);
  c.on_step(80.0, 6, 6, 0);  // base min(32, 6) = 6, floor(6 * 50 / 80) = 3
  EXPECT_EQ(c.cap(), 3);
  c.on_step(900.0, 3, 3, 0);
  c.on_step(900.0, 3, 3, 0);  // floor(3 * 50 / 900) = 0 -> clamped to min_cap 1
  EXPECT_EQ(c.cap(), 1);
}

TEST(BatchCapTest, PrefillOnlyStepsAreNotTpotSamples) {
  BatchCapConfig cfg;
  cfg.tpot_target_ms = 100.0;
  cfg.window = 2;
  cfg.interval = 1;
  BatchCapController c(cfg);
  for (int i = 0; i < 10; ++i) c.on_step(5000.0, 0, 4, 0);  // long prefills, nobody decoding
  EXPECT_EQ(c.cap(), 32);
  EXPECT_EQ(c.p99_tpot_ms(), 0.0);
}

TEST(BatchCapTest, RaisesOnlyWithDemandAndHeadroom) {
  BatchCapConfig cfg;
  cfg.tpot_target_ms = 100.0;
  cfg.max_cap = 8;
  cfg.window = 2;
  cfg.interval = 2;
  BatchCapController c(cfg);
  c.on_step(150.0, 8, 8, 4);
  c.on_step(150.0, 8, 8, 4);
  ASSERT_EQ(c.cap(), 5);  // floor(8 * 100 / 150)
  c.on_step(70.0, 5, 5, 4);
  c.on_step(70.0, 5, 5, 4);
  ASSERT_EQ(c.cap(), 6);
  // Fast steps but nobody waiting: no raise.
  for (int i = 0; i < 6; ++i) c.on_step(10.0, 6, 6, 0);
  EXPECT_EQ(c.cap(), 6);
  // Waiting requests but the batch below the cap: no raise either.
  for (int i = 0; i < 6; ++i) c.on_step(10.0, 4, 4, 3);
  EXPECT_EQ(c.cap(), 6);
  // Waiting requests and the batch at the cap, P99 90 ms: within target but above 0.8 x target.
  for (int i = 0; i < 6; ++i) c.on_step(90.0, 6, 6, 3);
  EXPECT_EQ(c.cap(), 6);
  // 70 ms < 80 ms: one raise per decision.
  c.on_step(70.0, 6, 6, 3);
  c.on_step(70.0, 6, 6, 3);
  EXPECT_EQ(c.cap(), 7);
  c.on_step(70.0, 7, 7, 3);
  c.on_step(70.0, 7, 7, 3);
  EXPECT_EQ(c.cap(), 8);
  c.on_step(70.0, 8, 8, 3);
  c.on_step(70.0, 8, 8, 3);
  EXPECT_EQ(c.cap(), 8);  // the configured maximum
  EXPECT_EQ(c.n_raises(), 3);
}

TEST(BatchCapTest, MissedTtftSpendsTpotHeadroom) {
  BatchCapConfig cfg;
  cfg.tpot_target_ms = 100.0;
  cfg.ttft_target_ms = 1000.0;
  cfg.max_cap = 8;
  cfg.window = 2;
  cfg.interval = 2;
  BatchCapController c(cfg);
  c.on_step(150.0, 8, 8, 4);
  c.on_step(150.0, 8, 8, 4);
  ASSERT_EQ(c.cap(), 5);
  c.on_step(60.0, 5, 5, 3);
  c.on_step(60.0, 5, 5, 3);
  ASSERT_EQ(c.cap(), 6);
  c.on_first_token(500.0);  // TTFT within target: 90 ms steps do not raise (0.8 rule)
  for (int i = 0; i < 4; ++i) c.on_step(90.0, 6, 6, 3);
  EXPECT_EQ(c.cap(), 6);
  c.on_first_token(5000.0);  // P99 TTFT now 5 s > 1 s: headroom up to the TPOT target is spent
  c.on_step(90.0, 6, 6, 3);
  c.on_step(90.0, 6, 6, 3);
  EXPECT_EQ(c.cap(), 7);
}

// Closed loop: a fake model whose decode step takes 20 ms + 10 ms per running request, 30 clients
// always waiting. With a 100 ms target the largest batch inside it is 8 (100 ms); the controller
// must settle where every decision window's P99 stays within the target most of the time and the
// cap oscillates around 8, never at the configured 32.
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
    running = std::min(c.cap(), std::max(running, 0) + 4);  // admit up to 4 per step
    const double step_ms = 20.0 + 10.0 * running;
    c.on_step(step_ms, running, running, 30);
    if (c.cap() < running) running = std::max(c.cap(), running - 2);  // requests finish over time
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
