// MtpDrafter: DeepSeek's multi-token-prediction module as the draft model of speculative
// decoding (--speculative-algorithm NEXTN; docs/speculative.md).
//
// After every engine step (its commit done) run() brings the module's own cache rows (KV layer
// n_layers of the engine's cache, in the sequences' pages) up to date for the positions the step
// computed and kept, from the target's final-normed hidden states of that step (ws.hidden) and
// each position's next token; then, for every sequence that will decode, it drafts
// num_steps tokens: the module's argmax at the newest position, then chained (the module's own
// block output as the next hidden state). Drafts are greedy (one deterministic token per
// position), which is what the engine's verification assumes.
//
// Positions a request took from the prefix cache keep the module rows their first request wrote
// (the last one's next token may differ: a draft-quality matter only, drafts are verified).
// Threading: the engine thread. No allocation after construction.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/forward_batch.h"
#include "kv/kv_cache.h"
#include "model/runtime/model.h"
#include "sched/scheduler.h"
#include "sched/step_plan.h"

namespace dss {

class MtpDrafter {
 public:
  // ws: the engine's workspace (WorkspaceLimits::mtp), max_tokens tokens and max_seqs logit
  // rows; context_length: no draft reaches past it.
  MtpDrafter(const Model& model, KvCache& kv, Workspace& ws, int32_t page_size, int32_t num_steps,
             int32_t max_seqs, int32_t max_tokens, int32_t context_length);

  // `batch` is the one the step ran (plan's order); wants_draft(id): the request may draft
  // (live, not grammar-constrained). Sets the drafts through Scheduler::set_draft.
  void run(const StepPlan& plan, const ForwardBatch& batch, Scheduler& sched,
           const std::function<bool(RequestId)>& wants_draft);

  int64_t forwards() const { return forwards_; }  // module forwards so far (each a batch)
  double seconds() const { return seconds_; }     // their wall time

 private:
  struct Drafting {
    RequestId id;
    int32_t row;  // its row in the last module forward's tokens
    int32_t pos;  // that row's position
    int32_t n;    // tokens drafted so far
  };
  void catch_up(const StepPlan& plan, const ForwardBatch& step, const Scheduler& sched,
                const std::function<bool(RequestId)>& wants_draft);
  void chain_step(Scheduler& sched);
  std::span<TokenId> draft_row(size_t j);  // drafting_[j]'s drafts so far (num_steps_ slots)
  void clear();
  void add_seq(std::span<const PageId> pages, int32_t kv_len);
  void add_token(TokenId token, int32_t pos, std::span<const PageId> pages, const float* hidden);
  ForwardBatch batch();
  void forward();
  TokenId argmax_row(int32_t j) const;

  const Model& model_;
  KvCache& kv_;
  Workspace& ws_;
  int32_t page_size_, num_steps_, context_length_, d_model_, n_vocab_;
  // The module forward being built (struct of arrays, as BatchBuilder's).
  std::vector<TokenId> tokens_;
  std::vector<int32_t> positions_, seq_begin_, kv_len_, slots_, logit_rows_;
  std::vector<PageId> page_table_;
  int32_t max_pages_;
  std::vector<float> hidden_in_, block_out_, logits_;  // [max_tokens, d], same, [max_seqs, V]
  std::vector<Drafting> drafting_;
  std::vector<TokenId> drafts_;  // [max_seqs, num_steps]
  int64_t forwards_ = 0;
  double seconds_ = 0.0;
};

}  // namespace dss
