// StepWatchdog: the stall limit as a pure function (configured, auto before and after the first
// step, after a signal), and in a child process: a step past the limit runs on_stall, logs the
// stall naming the rank and exits with status 3; steps within the limit do not.
#include "engine/step_watchdog.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace dss {
namespace {

TEST(StepWatchdog, Limit) {
  using W = StepWatchdog;
  EXPECT_EQ(W::limit_s(7.5, 0.0, false), 7.5);             // configured wins
  EXPECT_EQ(W::limit_s(7.5, 100.0, false), 7.5);           // whatever the history
  EXPECT_EQ(W::limit_s(0.0, 0.0, false), W::kAutoFirstS);  // auto, no step completed yet
  EXPECT_EQ(W::limit_s(0.0, 0.5, false), W::kAutoMinS);    // short steps: the floor
  EXPECT_EQ(W::limit_s(0.0, 4.0, false), 8.0);             // long steps: twice the longest
  // After SIGTERM: twice the longest step, within [0.3 s, 0.7 s] (SIGKILL follows at 1 s).
  EXPECT_EQ(W::limit_s(0.0, 0.0, true), W::kAfterSignalS);
  EXPECT_EQ(W::limit_s(7.5, 0.05, true), W::kAfterSignalS);
  EXPECT_EQ(W::limit_s(0.0, 0.25, true), 0.5);
  EXPECT_EQ(W::limit_s(7.5, 4.0, true), W::kAfterSignalMaxS);
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

TEST(StepWatchdogDeathTest, AStalledStepEndsTheProcessAfterOnStall) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        StepWatchdog w(0.3, 5);
        w.set_on_stall(
            [](const std::string& why) { std::fprintf(stderr, "on_stall: %s\n", why.c_str()); });
        for (int i = 0; i < 3; ++i) {  // steps within the limit
          w.step_begin();
          sleep_s(0.1);
          w.step_end();
        }
        w.step_begin();
        sleep_s(10.0);  // stalled
        std::exit(0);
      },
      ::testing::ExitedWithCode(3),
      "rank 5: step 4 stalled for .* \\(limit 0.3 s\\)[^\n]*\n.*on_stall: rank 5");
}

TEST(StepWatchdogDeathTest, AfterASignalTheLimitIsShort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        StepWatchdog w(0.0, 1);  // auto: 60 s for the first step
        w.step_begin();
        sleep_s(0.1);
        w.expect_shutdown();
        sleep_s(10.0);
        std::exit(0);
      },
      ::testing::ExitedWithCode(3), "after SIGTERM");
}

TEST(StepWatchdog, IdleOrQuickStepsNeverFire) {
  StepWatchdog w(0.2, 0);
  sleep_s(0.4);  // no step in flight
  for (int i = 0; i < 4; ++i) {
    w.step_begin();
    sleep_s(0.05);
    w.step_end();
  }
  SUCCEED();  // had the watchdog fired, the test binary would have exited with status 3
}

}  // namespace
}  // namespace dss
