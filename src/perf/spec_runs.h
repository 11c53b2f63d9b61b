// `dsserve bench-model --speculative-algorithm nextn`: the step times speculative decoding with
// DeepSeek's MTP module is made of, at each batch size, relative to a plain decode step, and the
// speedup they imply at given acceptance rates. Random weights accept almost no draft, so no
// speedup is measured: the implied one is arithmetic on measured step times (docs/speculative.md).
// Threading: the caller's thread drives the model's pool; not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "base/rng.h"
#include "model/runtime/model.h"
#include "perf/bench_model_options.h"

namespace dss::perf {

struct SpecStepTimes {
  int32_t batch = 0;
  // Medians over the timed steps of all repetitions (ms), every sequence at a.spec_context
  // cached tokens: a plain decode step (1 token per sequence); a verify step (1 + K tokens per
  // sequence in the absorbed form); the MTP module's catch-up over a verify step whose K drafts
  // were all accepted (K + 1 rows per sequence, its first draft included); one chained draft
  // step of the module (1 row per sequence).
  double plain_ms = 0, verify_ms = 0, catchup_ms = 0, draft_ms = 0;
  // Routed experts a plain and a verify step read (Workspace::routed_expert_reads, summed over
  // the MoE layers; mean per step): a verify step's tokens route to more distinct experts, the
  // part of its cost no kernel can remove (ActiveBytes::step_bytes turns them into bytes).
  double plain_routed_reads = 0, verify_routed_reads = 0;
  // A decode cycle: verify + catch-up + (K - 1) chained draft steps.
  double cycle_ms(int32_t k) const { return verify_ms + catchup_ms + (k - 1) * draft_ms; }
};

// Expected tokens per cycle when each draft token is accepted with probability `alpha` given the
// ones before it were: sum_{i=0..K} alpha^i (the accepted drafts and the target's own token).
double expected_tokens_per_cycle(double alpha, int32_t k);

// One result per a.spec_batch (the model has the MTP module: Model::load with mtp).
std::vector<SpecStepTimes> bench_spec_steps(const Model& m, const BenchModelOptions& a, Rng& rng);

}  // namespace dss::perf
