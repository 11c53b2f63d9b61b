// bench-model's phase times (--phase-times, base/phase_timer.h) in its JSON and on stderr, and
// set against the bytes-and-FLOPs bound of the same step (decode_flops.h).
#pragma once

#include <cstdint>
#include <string>

#include "io/json.h"
#include "perf/decode_flops.h"

namespace dss::perf {

// A tg test's key in phases_per_forward and phases_vs_bound: tg<T>_bs<B>.
std::string tg_phase_key(int32_t decode_tokens, int32_t b);

// The phases of the forward calls since phase_reset() (bench_prefill / bench_decode reset at
// their first measured repetition), per forward call: ms and calls, into
// j["phases_per_forward"][test] and a table on stderr. Nothing while the phase timers are off.
// With --ab-variants n > 1 also each variant's, into j["phases_per_variant"][test][v] (plus
// "forwards": its forward calls) and a table per variant.
void report_phases(OrderedJson& j, const std::string& test);

// A tg test's measured phases per forward (phases_per_forward) beside the bound of the same
// step's phases (decode_step_bound): mla holds the attention and the V3.2 indexer, moe.route the
// router, moe.experts the experts, the forward the whole step (whose bound also has the
// embedding row and norms). {phase: {ms, bound_ms}}; empty without phase times.
OrderedJson phases_vs_bound(const OrderedJson& measured, const StepBound& bound);

}  // namespace dss::perf
