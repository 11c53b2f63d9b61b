#include "base/phase_timer.h"

#include <atomic>
#include <iterator>

#include "base/check.h"

namespace dss {

namespace {
// [variant][phase]
std::array<std::array<std::atomic<int64_t>, kNumPhases>, kMaxPhaseVariants> g_ns{};
std::array<std::array<std::atomic<int64_t>, kNumPhases>, kMaxPhaseVariants> g_calls{};
}  // namespace

const char* phase_name(Phase p) {
  static constexpr const char* kNames[] = {
      "forward",  "mla",       "mla.q_a+kv_a", "mla.q_b",   "mla.rope+cache",
      "mla.attn", "mla.o",     "moe",          "moe.route", "moe.experts",
      "moe.sum",  "dense_ffn", "lm_head",      "collective"};
  static_assert(std::size(kNames) == kNumPhases, "a name per phase");
  const auto i = static_cast<int32_t>(p);
  return i >= 0 && i < kNumPhases ? kNames[static_cast<size_t>(i)] : "?";
}

void phase_add(Phase p, int64_t ns) {
  const auto v = static_cast<size_t>(phase_variant());
  const auto i = static_cast<size_t>(p);
  g_ns[v][i].fetch_add(ns, std::memory_order_relaxed);
  g_calls[v][i].fetch_add(1, std::memory_order_relaxed);
}

PhaseTotals phase_totals(int32_t v) {
  DSS_CHECK(v >= -1 && v < phase_variants(), "phase_totals: variant ", v, " of ", phase_variants());
  PhaseTotals t;
  int64_t ns[kNumPhases] = {};
  const int32_t k0 = v < 0 ? 0 : v, k1 = v < 0 ? kMaxPhaseVariants : v + 1;
  for (int32_t k = k0; k < k1; ++k) {
    for (size_t i = 0; i < static_cast<size_t>(kNumPhases); ++i) {
      ns[i] += g_ns[static_cast<size_t>(k)][i].load(std::memory_order_relaxed);
      t.calls[i] += g_calls[static_cast<size_t>(k)][i].load(std::memory_order_relaxed);
    }
  }
  for (size_t i = 0; i < static_cast<size_t>(kNumPhases); ++i) {
    t.seconds[i] = static_cast<double>(ns[i]) * 1e-9;
  }
  return t;
}

void phase_reset() {
  for (size_t v = 0; v < static_cast<size_t>(kMaxPhaseVariants); ++v) {
    for (size_t i = 0; i < static_cast<size_t>(kNumPhases); ++i) {
      g_ns[v][i].store(0, std::memory_order_relaxed);
      g_calls[v][i].store(0, std::memory_order_relaxed);
    }
  }
}

void set_phase_variants(int32_t n) {
  DSS_CHECK(n >= 1 && n <= kMaxPhaseVariants, "set_phase_variants(", n, "): 1..",
            kMaxPhaseVariants);
  phase_timer_detail::g_variants.store(n, std::memory_order_relaxed);
  phase_timer_detail::g_variant.store(0, std::memory_order_relaxed);
}

void restart_phase_variants(int64_t i) {
  DSS_CHECK(i >= 0, "restart_phase_variants(", i, ")");
  phase_timer_detail::g_variant.store(static_cast<int32_t>(i % phase_variants()),
                                      std::memory_order_relaxed);
}

}  // namespace dss
