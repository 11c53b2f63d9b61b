// Engine: the only thread-safe entry point into the serving core. It owns the model, the KV
// cache, the page pool, the radix prefix cache, the scheduler and the sampler, and runs them on
// one engine thread: drain the inbox -> plan -> forward -> sample -> commit -> emit events.
//
// Threading: submit(), cancel(), stats() and shutdown() may be called from any thread; sinks run
// on the engine thread and must not block. Detokenization and parsing are the consumer's job.
// Lifetime: shutdown() (or the destructor) aborts what is still queued or running (each gets a
// final kAbort event), then joins the engine thread.
// Tensor parallel: every rank of the group creates its Engine with the same options and the
// group; rank 0's engine is the one above (requests, scheduler, sampling), and sends each step's
// batch to the others (engine/step_channel.h), which call follow() and run the same forwards on
// their shard until rank 0's engine shuts down.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "core/generate.h"
#include "core/spec_counters.h"
#include "dist/mpi_comm.h"
#include "engine/engine_options.h"
#include "io/model_config.h"

namespace dss {

// One rank of a tensor-parallel group, as of the engine's last exchange of these (every
// kRankStatsEvery steps): its forward passes, their wall time, and the part of it and the bytes
// spent in the group's collectives.
struct RankStats {
  int64_t forwards = 0;
  double forward_seconds = 0.0;
  double collective_seconds = 0.0;
  int64_t collective_bytes = 0;
};
inline constexpr int64_t kRankStatsEvery = 16;

struct EngineStats {
  int32_t n_running = 0;
  int32_t n_waiting = 0;
  int32_t kv_pages_total = 0;
  int32_t kv_pages_used = 0;    // pages not free (held by requests or the prefix cache)
  int32_t kv_pages_cached = 0;  // pages held by the prefix cache
  int32_t page_size = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_query_tokens = 0;
  int64_t prompt_tokens_computed = 0;  // prefill work actually done
  int64_t generation_tokens = 0;
  int64_t preemptions = 0;
  int64_t steps = 0;
  double busy_seconds = 0.0;  // time spent in steps
  double last_step_ms = 0.0;
  int64_t requests_finished = 0;
  int32_t batch_cap = 0;         // running-batch admission limit now (dynamic batch cap)
  int64_t batch_cap_raises = 0;  // dynamic batch cap decisions (0 when off)
  int64_t batch_cap_lowers = 0;
  double batch_cap_p99_tpot_ms = 0;   // the P99 step time the last decision window saw
  int64_t grammar_masks = 0;          // structured output: allowed-token masks computed
  double grammar_mask_seconds = 0.0;  // time spent computing them (engine thread, per step)
  std::vector<RankStats> ranks;       // tensor parallel: [tp_size]; empty otherwise
  // Speculative decoding (num_steps 0: off): the scheduler's counters and the drafter's wall
  // time (the MTP module's forwards; NGRAM's lookups are not timed).
  int32_t spec_num_steps = 0;
  SpecCounters spec;
  double spec_draft_seconds = 0.0;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> create(const EngineOptions& opts,
                                                MpiComm* tp_group = nullptr);
  // Ranks other than 0 of a tensor-parallel group: runs rank 0's steps until it shuts down.
  // Blocks; call it on the thread that made the engine.
  void follow();
  ~Engine();

  // Validates (token ids in range, sampling parameters, prompt + max_tokens within the context)
  // and queues the request; errors are for the caller to show (an HTTP 400).
  Result<RequestId> submit(GenerateRequest req, EventSink sink);
  // Takes effect at the next step boundary; the request's last event has FinishReason::kAbort.
  void cancel(RequestId id);
  EngineStats stats() const;
  void shutdown();

  const ModelConfig& model_config() const;
  int32_t context_length() const;
  // Synchronous check of every page: pool, radix, scheduler (blocks until the engine is between
  // steps).
  void check_integrity();

  // Parallel jobs (a tensor-parallel group of size > 1; no-ops otherwise): the step watchdog
  // (engine/step_watchdog.h). on_stall runs once, on the watchdog's thread, before the process
  // exits; expect_shutdown() after a SIGTERM shortens the stall limit.
  void set_on_stall(std::function<void(const std::string&)> on_stall);
  void expect_shutdown();

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dss
