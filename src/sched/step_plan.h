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
  int32_t n_new = 0;          // tokens computed this step (1 for a decode; + n_draft to verify)
  bool needs_logits = false;  // the step reaches the sequence's newest token: sample one
  // The sequence's tokens [n_computed + n_new - n_draft] (prompt + generated).
  const TokenId* tokens = nullptr;
  const PageId* pages = nullptr;  // its page table (covers n_computed + n_new tokens)
  int32_t n_pages = 0;
  // Speculative decoding (a decode only): draft tokens computed after the newest token, at the
  // positions following it. The step then needs logits for the newest token and every draft
  // token (1 + n_draft rows, in position order).
  const TokenId* draft = nullptr;
  int32_t n_draft = 0;

  int32_t n_logit_rows() const { return needs_logits ? 1 + n_draft : 0; }
  // A decode step of a generating sequence (one token, or one token and its draft to verify).
  bool is_decode() const { return n_new - n_draft == 1 && needs_logits && n_computed > 0; }
};

struct StepPlan {
  std::vector<ScheduledSeq> seqs;  // running order: continuing requests first, then newly admitted
  std::vector<RequestId> preempted;  // sent back to waiting this step (recompute later)
  int32_t n_tokens = 0;              // sum of n_new
  int32_t n_prefill_tokens = 0;      // tokens of sequences that are not decodes (is_decode)
  int32_t n_draft_tokens = 0;        // sum of n_draft
  bool empty() const { return seqs.empty(); }
};

// Per-sequence result of a step, in the order of the plan's seqs with needs_logits.

struct StepResult {
  // The sampled token (appended; ignored with kError), after the first n_accepted tokens of the
  // sequence's draft (speculative decoding: the draft tokens the target model's samples matched;
  // their KV, computed this step, stays; the rejected drafts' KV is dropped).
  TokenId token = 0;
  // kError: the step failed for this sequence (e.g. non-finite logits): nothing is appended and
  // its pages are released without being offered to the prefix cache (their KV may be garbage).
  FinishReason finish = FinishReason::kNone;
  int32_t n_accepted = 0;
};

}  // namespace dss
