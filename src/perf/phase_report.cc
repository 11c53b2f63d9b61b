#include "perf/phase_report.h"

#include <algorithm>
#include <array>
#include <utility>

#include "base/phase_timer.h"
#include "base/str_cat.h"
#include "perf/progress.h"

namespace dss::perf {

namespace {

// One table of phases (ms and calls per forward call) on stderr and as JSON; {} without calls.
OrderedJson phases_of(const PhaseTotals& t, const std::string& title) {
  const auto n = static_cast<double>(t.calls[static_cast<size_t>(Phase::kForward)]);
  OrderedJson o;
  if (n == 0) return o;
  progress("bench-model: %s (ms, calls)\n", title.c_str());
  for (int32_t i = 0; i < kNumPhases; ++i) {
    const auto k = static_cast<size_t>(i);
    if (t.calls[k] == 0) continue;
    const double ms = t.seconds[k] * 1e3 / n, calls = static_cast<double>(t.calls[k]) / n;
    progress("  %-16s %10.3f %7.1f\n", phase_name(static_cast<Phase>(i)), ms, calls);
    o[phase_name(static_cast<Phase>(i))] = {{"ms", ms}, {"calls", calls}};
  }
  return o;
}

}  // namespace

std::string tg_phase_key(int32_t decode_tokens, int32_t b) {
  return str_cat("tg", decode_tokens, "_bs", b);
}

void report_phases(OrderedJson& j, const std::string& test) {
  if (!phase_timers_on()) return;
  OrderedJson o = phases_of(phase_totals(), test + " phases per forward");
  if (o.empty()) return;
  j["phases_per_forward"][test] = o;
  if (phase_variants() == 1) return;
  OrderedJson per = OrderedJson::array();
  for (int32_t v = 0; v < phase_variants(); ++v) {
    const PhaseTotals t = phase_totals(v);
    OrderedJson ov = phases_of(t, str_cat(test, " variant ", v, " phases per forward"));
    ov["forwards"] = t.calls[static_cast<size_t>(Phase::kForward)];
    per.push_back(ov);
  }
  j["phases_per_variant"][test] = per;
}

OrderedJson phases_vs_bound(const OrderedJson& measured, const StepBound& bound) {
  // (measured phase, the bound's phases it holds; "": none)
  static constexpr std::pair<const char*, std::array<const char*, 2>> kMap[] = {
      {"mla", {"attention", "indexer"}},
      {"moe.route", {"router", ""}},
      {"moe.experts", {"experts", ""}},
      {"dense_ffn", {"dense_ffn", ""}},
      {"lm_head", {"lm_head", ""}}};
  OrderedJson o;
  for (const auto& [name, parts] : kMap) {
    if (!measured.contains(name)) continue;
    double s = 0;
    for (const BoundPhase& p : bound.phases) {
      if (p.name == parts[0] || p.name == parts[1]) s += std::max(p.bytes_s, p.flops_s);
    }
    o[name] = {{"ms", measured[name]["ms"].get<double>()}, {"bound_ms", s * 1e3}};
  }
  if (!o.empty() && measured.contains("forward")) {
    o["forward"] = {{"ms", measured["forward"]["ms"].get<double>()},
                    {"bound_ms", bound.seconds * 1e3}};
  }
  return o;
}

}  // namespace dss::perf
