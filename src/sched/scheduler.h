// Scheduler: continuous batching with chunked prefill, prefix reuse and preemption by recompute.
// Pure policy over plain state: no clock, threads, model or I/O (rule 8), so it is tested as
// step timelines with a fake model.
//
// Each step: `plan()` (prepare) decides which sequences compute how many tokens and reserves every
// page the step needs, all or nothing per sequence; the engine runs the model and samples; then
// `commit()` (apply) appends the sampled tokens and finishes sequences.
//
// Policy, in order, within a token budget of chunked_prefill_size per step:
//   1. running sequences in admission order: a decode costs 1 token, an unfinished prefill the
//      rest of its prompt (chunked to the budget). When pages run out: evict unlocked prefix-cache
//      leaves, then preempt the most recently admitted running sequence (its pages are freed and it
//      goes back to the front of the waiting queue, to be recomputed from its tokens).
//   2. waiting sequences FCFS (while running < max_running_requests): longest page-aligned prefix
//      from the radix cache is reused (at least one token is always computed, to get logits);
//      admission stops at the first sequence whose pages cannot be had (no preemption for
//      admission).
// Ownership (rule 9): every page a sequence holds carries one BlockPool reference taken in plan()
// and dropped in commit()/abort()/preemption; on finish or abort its full pages are offered to the
// radix cache first (which takes its own references), so a later request can reuse them.
// Threading: engine thread only; not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"
#include "core/types.h"
#include "kv/block_pool.h"
#include "kv/radix_cache.h"
#include "sched/scheduler_config.h"
#include "sched/step_plan.h"

namespace dss {

struct SchedRequest {
  RequestId id = 0;
  std::vector<TokenId> prompt;
  int32_t max_new_tokens = 16;
};

struct SeqStats {
  int32_t n_prompt = 0;
  int32_t n_generated = 0;
  int32_t n_cached_prompt = 0;  // prompt tokens served from the prefix cache (last admission)
  int32_t n_preemptions = 0;
};

struct StepOutcome {
  struct Done {
    RequestId id;
    FinishReason reason;
    SeqStats stats;
  };
  std::vector<Done> finished;  // finished this commit; their pages are already released
};

struct SchedulerCounters {
  int64_t prefix_hit_tokens = 0;  // prompt tokens reused from the radix cache
  int64_t prefill_tokens = 0;     // prompt/recompute tokens computed
  int64_t decode_tokens = 0;      // decode tokens computed
  int64_t preemptions = 0;
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& cfg, BlockPool& pool, RadixCache& prefix);
  ~Scheduler();

  // Validates and queues a request. Errors: empty prompt, prompt + max_new_tokens over
  // context_length, or a prompt that can never fit in the pool.
  Status add(SchedRequest req);
  // Removes a request now (waiting or running; between steps). Returns false if unknown.
  bool abort(RequestId id);

  StepPlan plan();
  // `results` has one entry per plan.seqs element with needs_logits, in order.
  void commit(const StepPlan& plan, std::span<const StepResult> results, StepOutcome& out);

  bool idle() const { return waiting_.empty() && running_.empty(); }
  int32_t n_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int32_t n_running() const { return static_cast<int32_t>(running_.size()); }
  std::optional<SeqStats> stats(RequestId id) const;
  const SchedulerCounters& counters() const { return counters_; }
  const SchedulerConfig& config() const { return cfg_; }
  // Admission limit below max_running_requests (the dynamic batch cap, sched/batch_cap.h); clamped
  // to [1, max_running_requests]. Lowering it never preempts: admission waits until the batch
  // shrinks under it.
  void set_running_cap(int32_t cap);
  int32_t running_cap() const { return running_cap_; }
  // Pages held by sequences (a page shared by two sequences counts twice).
  int32_t n_seq_pages() const;
  // Checks page accounting across sequences, pool and radix cache; aborts on violation.
  void check_integrity() const;

 private:
  struct Seq;
  bool ensure_pages(Seq& s, int32_t n_tokens);
  bool take_pages(int32_t n);
  void release_seq(Seq& s, bool cache_prefix);
  void preempt(std::unique_ptr<Seq> s);
  std::unique_ptr<Seq> remove_running(RequestId id);

  SchedulerConfig cfg_;
  BlockPool& pool_;
  RadixCache& prefix_;
  std::deque<std::unique_ptr<Seq>> waiting_;
  std::vector<std::unique_ptr<Seq>> running_;
  SchedulerCounters counters_;
  int32_t running_cap_;
};

}  // namespace dss
