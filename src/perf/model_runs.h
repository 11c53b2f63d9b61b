// The timed runs of `dsserve bench-model`, in the shapes of llama-bench (BatchDriver over
// Model::forward; no scheduler, no HTTP). Each test: one unmeasured warm-up, then
// a.repetitions measured runs. Token ids are fixed random ids from `rng` (not the argmax; the
// logits are computed and ignored). With phase timers on (base/phase_timer.h) the phase totals
// restart at each test's first measured repetition.
// Threading: the caller's thread drives the model's pool; not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "base/rng.h"
#include "core/types.h"
#include "model/runtime/model.h"
#include "perf/bench_model_options.h"
#include "tensor/dtype.h"

namespace dss::perf {

// The cache dtype: --kv-cache-dtype, "auto" resolving as the engine does (Model::default_kv_dtype).
DType kv_dtype_of(const Model& m, const BenchModelOptions& a);

// n ids uniform in [0, n_vocab).
std::vector<TokenId> random_ids(Rng& rng, size_t n, int32_t n_vocab);

// pp<n>: tok/s of one forward of n tokens on an empty cache, per repetition.
std::vector<double> bench_prefill(const Model& m, const BenchModelOptions& a, int32_t n, Rng& rng);

// tg<T> at batch b: tok/s = b * T / time of T batched decode steps from an empty cache, per
// repetition. With bw_gbps, it is replaced by read-bandwidth samples taken right before every
// measured repetition and once after the last (repetitions + 1 samples: repetition i between
// samples i and i + 1; each sample streams a --bandwidth-mib buffer, so a repetition starts with
// cold caches). *routed_reads_per_step: the routed experts a measured step read, summed over the
// MoE layers (Workspace::routed_expert_reads), mean over the measured steps;
// *collective_bytes_per_step (when given): the bytes a measured step handed to the tensor-parallel
// collectives (Workspace::collective_bytes), mean over the measured steps.
std::vector<double> bench_decode(const Model& m, const BenchModelOptions& a, int32_t b, Rng& rng,
                                 std::vector<double>* bw_gbps, double* routed_reads_per_step,
                                 double* collective_bytes_per_step = nullptr);

struct ContextResult {
  double prefill_s = 0;
  std::vector<double> tpot_ms;  // per repetition: mean time per decode step
};

// Long-context decode, one result per a.decode_context: per context c one sequence filled with
// c tokens (chunked prefill, timed once and reported; or --context-fill synthetic), then per
// repetition context_steps decode steps from context c (the cache is cut back to c between
// repetitions). All contexts are filled first and the repetitions are interleaved (rep 1 of
// every context, then rep 2, ...), so a slow spell of a shared machine lands on every context
// alike and their TPOT ratio stays meaningful.
std::vector<ContextResult> bench_contexts(const Model& m, const BenchModelOptions& a, Rng& rng);

}  // namespace dss::perf
