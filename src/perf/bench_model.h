// `dsserve bench-model`: the model's own speed, in-process (no scheduler, no HTTP), in the shapes
// of llama-bench so the numbers compare: pp<N> = one sequence, N random token ids, ONE forward of
// N tokens on an empty cache; tg<T> at batch B = B sequences decoding T tokens together from an
// empty cache, one forward per step, each step feeding fixed random ids (model_runs.h). Each
// test: one unmeasured warm-up, then `--repetitions` runs; mean and sample standard deviation of
// tok/s, as llama-bench reports them.
// The decode roofline is measured read bandwidth / weight bytes one token reads at batch 1
// (active_bytes.h); the bandwidth is measured right before and right after the runs, and before
// each batch-1 repetition and after the last (each repetition is also paired with its two:
// roofline.h). Every batch size also against its own roofline: the batch-1 weight bytes with the
// routed experts its steps actually read (each distinct expert of a layer once per step;
// Workspace::routed_expert_reads), so batch B's speedup over batch 1 can be set against what the
// weight bytes allow; and against its bytes-and-FLOPs bound (decode_flops.h: per phase the slower
// of its weight bytes at the read bandwidth and its FLOPs at the peak of the arithmetic the
// matmuls run, compute_peak.h): how much of a batch's distance from its roofline the machine's
// arithmetic accounts for, and how much the code loses. Prefill: GFLOP/s (prefill_flops.h)
// against the bf16-dot and f32 FMA peaks measured before and after the prefill runs.
// Long-context decode (`--decode-context`): one sequence per context C filled with C tokens by
// chunked prefill (its time printed), then `--context-steps` timed decode steps at context C,
// the repetitions of all contexts interleaved (bench_contexts).
// `--context-fill synthetic` writes random cache rows instead (BatchDriver::fill_synthetic): for
// iterating on long-context kernels only; the JSON records which fill produced the figures.
// `--phase-times` (base/phase_timer.h) also splits each pp / tg test's measured forward calls
// into phases: "phases_per_forward" in the JSON and a table on stderr. `--ab-variants N` has the
// forward calls alternate N variants (base/phase_timer.h) and adds each one's phases
// ("phases_per_variant"): for comparing two versions of a kernel within one run.
#pragma once

#include "model/runtime/model.h"
#include "perf/bench_model_options.h"

namespace dss::perf {

// Runs every test of `a` on `m` (loaded from a.model with a's weight flags; `a` valid) and
// prints one JSON object (--json) or the tables on stdout, progress on stderr. Turns the phase
// timers on for --phase-times / --ab-variants (process-wide, base/phase_timer.h).
void run_bench_model(const Model& m, const BenchModelOptions& a);

}  // namespace dss::perf
