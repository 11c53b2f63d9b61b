// StepPlan: what one engine step computes (the scheduler's "prepare" output), plain data.
// Pointers stay valid until the matching Scheduler::commit.
#pragma once

#include <cstdint>
#include <vector>

#include "core/finish_reason.h"
#include "core/types.h"

namespace dss {

struct ScheduledSeq {
  RequestId id = 0;
  int32_t n_computed = 0;     // tokens already in the KV cache before this step
  int32_t n_new = 0;          // tokens computed this step (1 for a decode)
  bool needs_logits = false;  // the step reaches the sequence's newest token: sample one
  const TokenId* tokens =
      nullptr;                    // the sequence's tokens [n_computed + n_new] (prompt + generated)
  const PageId* pages = nullptr;  // its page table (covers n_computed + n_new tokens)
  int32_t n_pages = 0;
};

struct StepPlan {
  std::vector<ScheduledSeq> seqs;  // running order: continuing requests first, then newly admitted
  std::vector<RequestId> preempted;  // sent back to waiting this step (recompute later)
  int32_t n_tokens = 0;              // sum of n_new
  int32_t n_prefill_tokens = 0;      // tokens of sequences with n_new > 1 or still prefilling
  bool empty() const { return seqs.empty(); }
};

// Per-sequence result of a step, in the order of the plan's seqs with needs_logits.

struct StepResult {
  TokenId token = 0;  // the sampled token (appended; ignored with kError)
  // kError: the step failed for this sequence (e.g. non-finite logits): nothing is appended and
  // its pages are released without being offered to the prefix cache (their KV may be garbage).
  FinishReason finish = FinishReason::kNone;
};

}  // namespace dss
