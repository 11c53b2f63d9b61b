#include "base/phase_timer.h"

#include <atomic>
#include <iterator>

namespace dss {

namespace {
std::array<std::atomic<int64_t>, kNumPhases> g_ns{};
std::array<std::atomic<int64_t>, kNumPhases> g_calls{};
}  // namespace

const char* phase_name(Phase p) {
  static constexpr const char* kNames[] = {
      "forward", "mla",       "mla.q_a+kv_a", "mla.q_b", "mla.rope+cache", "mla.attn", "mla.o",
      "moe",     "moe.route", "moe.experts",  "moe.sum", "dense_ffn",      "lm_head"};
  static_assert(std::size(kNames) == kNumPhases, "a name per phase");
  const auto i = static_cast<int32_t>(p);
  return i >= 0 && i < kNumPhases ? kNames[static_cast<size_t>(i)] : "?";
}

void phase_add(Phase p, int64_t ns) {
  const auto i = static_cast<size_t>(p);
  g_ns[i].fetch_add(ns, std::memory_order_relaxed);
  g_calls[i].fetch_add(1, std::memory_order_relaxed);
}

PhaseTotals phase_totals() {
  PhaseTotals t;
  for (size_t i = 0; i < static_cast<size_t>(kNumPhases); ++i) {
    t.seconds[i] = static_cast<double>(g_ns[i].load(std::memory_order_relaxed)) * 1e-9;
    t.calls[i] = g_calls[i].load(std::memory_order_relaxed);
  }
  return t;
}

void phase_reset() {
  for (size_t i = 0; i < static_cast<size_t>(kNumPhases); ++i) {
    g_ns[i].store(0, std::memory_order_relaxed);
    g_calls[i].store(0, std::memory_order_relaxed);
  }
}

}  // namespace dss
