// base/phase_timer.h: scopes add their wall time and one call to their phase only while the
// timers are on; a split charges each part to its own phase; reset zeroes every total; forward
// calls take the variants in turn and charge the one they ran.
#include "base/phase_timer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

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

// Variants: each forward call (a PhaseVariantScope around a kForward scope) charges the variant
// it ran and moves to the next; the totals split per variant and add up across them.
TEST(PhaseTimer, ForwardsTakeVariantsInTurn) {
  set_phase_timers(true);
  set_phase_variants(3);
  phase_reset();
  std::vector<int32_t> seen;
  for (int i = 0; i < 7; ++i) {
    const PhaseVariantScope variant_scope;
    DSS_PHASE_SCOPE(kForward);
    seen.push_back(phase_variant());
    DSS_PHASE_SCOPE(kMoe);
    sleep_ms(phase_variant() == 1 ? 6 : 1);
  }
  set_phase_timers(false);
  EXPECT_EQ(seen, (std::vector<int32_t>{0, 1, 2, 0, 1, 2, 0}));
  auto at = [&](Phase p) { return static_cast<size_t>(p); };
  const PhaseTotals v0 = phase_totals(0), v1 = phase_totals(1), v2 = phase_totals(2);
  const PhaseTotals all = phase_totals();
  EXPECT_EQ(v0.calls[at(Phase::kForward)], 3);
  EXPECT_EQ(v1.calls[at(Phase::kForward)], 2);
  EXPECT_EQ(v2.calls[at(Phase::kForward)], 2);
  EXPECT_EQ(all.calls[at(Phase::kMoe)], 7);
  EXPECT_GE(v1.seconds[at(Phase::kMoe)], 0.012);  // variant 1 slept 6 ms twice
  EXPECT_LT(v2.seconds[at(Phase::kMoe)], v1.seconds[at(Phase::kMoe)]);
  EXPECT_EQ(all.calls[at(Phase::kForward)], 7);
  // A restart moves the next forward to variant i mod n.
  restart_phase_variants(5);
  EXPECT_EQ(phase_variant(), 2);
  restart_phase_variants(3);
  EXPECT_EQ(phase_variant(), 0);
  // Fewer variants later: the totals of all variants still count until the next reset.
  set_phase_variants(2);
  EXPECT_EQ(phase_totals().calls[at(Phase::kForward)], 7);
  // Back to one variant: variant 0 from the start, and every forward charges it.
  set_phase_variants(1);
  EXPECT_EQ(phase_variant(), 0);
  { const PhaseVariantScope variant_scope; }
  EXPECT_EQ(phase_variant(), 0);
  phase_reset();
}

TEST(PhaseTimerDeathTest, VariantsOutOfRange) {
  EXPECT_DEATH(set_phase_variants(0), "set_phase_variants");
  EXPECT_DEATH(set_phase_variants(kMaxPhaseVariants + 1), "set_phase_variants");
  EXPECT_DEATH(phase_totals(1), "phase_totals: variant 1 of 1");
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
