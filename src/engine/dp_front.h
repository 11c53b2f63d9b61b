// DpFront: `serve --dp-size D` on world rank 0: one EngineApi over D data-parallel replicas, its
// own engine (replica 0) and the leaders of replicas 1..D-1 (engine/dp_replica.h), reached through
// an MpiMailbox over the leaders (mailbox rank r = replica r).
//
// A request is checked against the local engine (every replica runs the same configuration), then
// routed by DpRouter (sched/dp_router.h): the replica whose prefix cache most likely holds its
// prompt's prefix, else the least loaded (load = requests in flight there). Remote requests and
// cancels go out on the mailbox thread; their token events come back in batches and reach the sinks
// on that thread, with the times moved to this process's clock (arrival = when submit() ran here).
// Ids are the front's own. stats() sums the replicas' (the remote ones as of their last report,
// every kDpStatsEveryS).
// Faults: a replica leader that sends nothing (its reports are the heartbeat) for the limit
// (--dist-timeout, else kDpSilentLimitS) is gone or hung: on_stall runs with a message naming its
// world rank, then the process exits with status 3, as the step watchdog does. A tensor-parallel
// replica's leader reports between its steps, so there the limit is also at least kDpGapFactor
// times the longest gap seen between its messages (a step that long has happened). Under DP
// attention the step watchdog alone decides: the ranks step in lockstep.
// Threading: every method on any thread; sinks run on the local engine's thread or the mailbox
// thread and must not block.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dist/mpi_mailbox.h"
#include "engine/engine.h"
#include "sched/dp_router.h"

namespace dss {

inline constexpr double kDpSilentLimitS = 5.0;
inline constexpr double kDpGapFactor = 3.0;

// Which thread polls the mailbox. MPI allows two threads at once (MPI_THREAD_MULTIPLE), but
// OpenMPI orders its shared-memory traffic with atomics ThreadSanitizer cannot see, so where the
// engine thread runs collectives the mailbox goes on that thread too (one thread calls MPI).
enum class DpDrive {
  kOwnThread,     // a thread of the front's own (the engine runs no collectives)
  kBetweenSteps,  // the engine's round hook between its steps (a tensor-parallel group)
  kLockstep,      // the engine's round hook, each lockstep round (DP attention)
};
// A leader's first message (it may still be loading its tokenizer), waited for by wait_ready():
// the step watchdog's first-step allowance.
inline constexpr double kDpStartLimitS = 60.0;

class DpFront final : public EngineApi {
 public:
  // leader_world_ranks[r]: replica r's leader's world rank (for messages); mail.size() replicas.
  // drive: kOwnThread starts the polling thread; otherwise the caller drives poll_once (the
  // engine's round hook), and stop() polls on the calling thread once the engine has ended.
  DpFront(Engine& local, MpiMailbox& mail, std::vector<int> leader_world_ranks,
          const DpRouterOptions& router, double silent_limit_s, DpDrive drive);
  ~DpFront() override;

  Result<RequestId> submit(GenerateRequest req, EventSink sink) override;
  void cancel(RequestId id) override;
  EngineStats stats() const override;
  const ModelConfig& model_config() const override { return local_.model_config(); }
  int32_t context_length() const override { return local_.context_length(); }
  void set_on_stall(std::function<void(const std::string&)> on_stall) override;
  // The launcher is ending the job (a rank died, or mpirun was signalled): the remote replicas'
  // requests cannot finish, so every open call is answered now (on_stall).
  void expect_shutdown() override;

  // Tells the remote replicas to stop (they abort what is left: kAbort events reach the sinks);
  // returns at once. New requests are refused from then on.
  void request_stop();
  // request_stop(), then waits up to `timeout_s` for each replica's last message. False if one
  // did not answer. Idempotent. The local engine is the caller's to shut down: under DP attention
  // between the two (the engines stop together, in lockstep).
  bool stop(double timeout_s = 10.0);
  // Waits until every replica leader has sent its first message (its engine and vocabulary are
  // ready), up to kDpStartLimitS; false (and an error logged naming the rank) if one has not.
  // The server starts, and /health answers, only after.
  bool wait_ready();
  // One round of the mailbox: sends what is queued, hands out what arrived, checks the silence
  // limit. True if anything moved. One thread at a time (the own thread, or the driver).
  bool poll_once();

 private:
  struct Route {
    int32_t replica = 0;
    RequestId inner = 0;  // the local engine's id (replica 0); remote ones use the front's
    EventSink sink;
    double t_submit = 0.0;
  };
  struct Outgoing {
    int32_t replica;
    int tag;
    std::vector<uint8_t> bytes;
  };
  void run();  // the own thread: poll_once with the pacing of dp_wire.h
  void on_events(int32_t replica, std::vector<TokenEvent> events);
  void finish(RequestId id, int32_t replica);  // under mu_
  void check_silence(double now);
  void fail(const std::string& why);

  Engine& local_;
  MpiMailbox& mail_;
  std::vector<int> leader_world_ranks_;
  double silent_limit_s_;
  DpDrive drive_;
  int32_t n_replicas_;

  mutable std::mutex mu_;
  DpRouter router_;
  std::vector<int64_t> load_;                    // requests in flight per replica
  std::vector<int64_t> routed_;                  // requests sent, per replica
  std::unordered_map<RequestId, Route> routes_;  // requests in flight
  std::deque<Outgoing> outbox_;
  std::vector<EngineStats> remote_stats_;  // [n_replicas]; [0] unused
  std::vector<double> last_heard_;         // [n_replicas]; now_seconds()
  std::vector<bool> heard_;                // [n_replicas]: a message came
  std::vector<double> longest_gap_;        // [n_replicas]: seconds between two messages
  std::function<void(const std::string&)> on_stall_;
  bool stopping_ = false;
  int32_t n_byes_ = 0;
  std::atomic<bool> done_{false};
  std::atomic<RequestId> next_id_{1};
  std::thread thread_;
};

}  // namespace dss
