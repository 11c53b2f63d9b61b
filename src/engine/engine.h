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
#include "engine/engine_api.h"
#include "engine/engine_options.h"
#include "io/model_config.h"

namespace dss {

class Engine final : public EngineApi {
 public:
  // dp_group (DP attention, size > 1; tp_group then null): this engine is one attention group of
  // the group's ranks, with its own requests, scheduler and caches; the routed experts are
  // partitioned over the ranks and every step runs in lockstep with the other ranks' engines (a
  // rank without work runs Model::idle_forward), each of them created alike.
  static Result<std::unique_ptr<Engine>> create(const EngineOptions& opts,
                                                MpiComm* tp_group = nullptr,
                                                MpiComm* dp_group = nullptr);
  // Ranks other than 0 of a tensor-parallel group: runs rank 0's steps until it shuts down.
  // Blocks; call it on the thread that made the engine.
  void follow();
  ~Engine();

  // Validates (token ids in range, sampling parameters, prompt + max_tokens within the context)
  // and queues the request; errors are for the caller to show (an HTTP 400).
  Result<RequestId> submit(GenerateRequest req, EventSink sink) override;
  // submit()'s checks alone (no queueing): the data-parallel front checks a request here before
  // it goes to another replica, whose engine has the same configuration.
  Status validate(const GenerateRequest& req) const;
  // Takes effect at the next step boundary; the request's last event has FinishReason::kAbort.
  void cancel(RequestId id) override;
  EngineStats stats() const override;
  void shutdown();  // request_stop(), then join()
  // The first half of shutdown(), without waiting (also from a round hook, on the engine thread).
  void request_stop();
  // Waits until the engine thread has ended: after request_stop(), or under DP attention once
  // every rank's engine has stopped.
  void join();
  // Only where calls_collectives(): `hook` runs on the engine thread at the start of every
  // lockstep round (DP attention, before its collective) or between steps (tensor parallel;
  // idle, every kLockstepIdlePause), so the process's point-to-point traffic (the data-parallel
  // front's or a replica's mailbox) runs on the one thread that calls MPI. Set once, before the
  // requests it brings; it may call submit, cancel, stats and request_stop.
  void set_round_hook(std::function<void()> hook);
  bool lockstep() const;  // DP attention: the engine steps in lockstep with other ranks'
  // Whether the engine thread runs collectives (DP attention, or a tensor-parallel group).
  bool calls_collectives() const;

  const ModelConfig& model_config() const override;
  int32_t context_length() const override;
  // Synchronous check of every page: pool, radix, scheduler (blocks until the engine is between
  // steps).
  void check_integrity();

  // Parallel jobs (a tensor-parallel group of size > 1; no-ops otherwise): the step watchdog
  // (engine/step_watchdog.h). on_stall runs once, on the watchdog's thread, before the process
  // exits; expect_shutdown() after a SIGTERM shortens the stall limit.
  void set_on_stall(std::function<void(const std::string&)> on_stall) override;
  void expect_shutdown() override;

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dss
