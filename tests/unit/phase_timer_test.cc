// base/phase_timer.h: scopes add their wall time and one call to their phase only while the
// timers are on; a split charges each part to its own phase; reset zeroes every total.
#include "base/phase_timer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>

namespace dss {
namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST(PhaseTimer, OffAddsNothing) {
  set_phase_timers(false);
  phase_reset();
  {
    DSS_PHASE_SCOPE(kMoe);
    DSS_PHASES(split, kMlaQb);
    DSS_PHASE_NEXT(split, kMlaOut);
  }
  const PhaseTotals t = phase_totals();
  for (int32_t i = 0; i < kNumPhases; ++i) {
    EXPECT_EQ(t.calls[static_cast<size_t>(i)], 0) << phase_name(static_cast<Phase>(i));
    EXPECT_EQ(t.seconds[static_cast<size_t>(i)], 0.0) << phase_name(static_cast<Phase>(i));
  }
}

TEST(PhaseTimer, ScopesAndSplitsChargeTheirPhases) {
  set_phase_timers(true);
  phase_reset();
  {
    DSS_PHASE_SCOPE(kMoe);
    sleep_ms(5);
    {
      DSS_PHASES(split, kMlaQb);
      sleep_ms(5);
      DSS_PHASE_NEXT(split, kMlaOut);
      sleep_ms(10);
    }
  }
  set_phase_timers(false);
  const PhaseTotals t = phase_totals();
  auto at = [&](Phase p) { return static_cast<size_t>(p); };
  EXPECT_EQ(t.calls[at(Phase::kMoe)], 1);
  EXPECT_EQ(t.calls[at(Phase::kMlaQb)], 1);
  EXPECT_EQ(t.calls[at(Phase::kMlaOut)], 1);
  EXPECT_GE(t.seconds[at(Phase::kMlaQb)], 0.005);
  EXPECT_GE(t.seconds[at(Phase::kMlaOut)], 0.010);
  // The outer scope holds both parts of the split and its own sleep.
  EXPECT_GE(t.seconds[at(Phase::kMoe)],
            0.005 + t.seconds[at(Phase::kMlaQb)] + t.seconds[at(Phase::kMlaOut)]);
  int32_t charged = 0;
  for (int32_t i = 0; i < kNumPhases; ++i) charged += t.calls[static_cast<size_t>(i)] > 0;
  EXPECT_EQ(charged, 3);
  phase_reset();
  const PhaseTotals z = phase_totals();
  EXPECT_EQ(z.calls[at(Phase::kMoe)], 0);
  EXPECT_EQ(z.seconds[at(Phase::kMlaOut)], 0.0);
}

TEST(PhaseTimer, EveryPhaseHasItsOwnName) {
  std::set<std::string> names;
  for (int32_t i = 0; i < kNumPhases; ++i) {
    const char* n = phase_name(static_cast<Phase>(i));
    EXPECT_STRNE(n, "?");
    names.insert(n);
  }
  EXPECT_EQ(static_cast<int32_t>(names.size()), kNumPhases);
  EXPECT_STREQ(phase_name(Phase::kCount), "?");
}

}  // namespace
}  // namespace dss
