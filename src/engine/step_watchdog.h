// StepWatchdog: ends a parallel job whose forward step has stalled. Every rank of a tensor-
// parallel group runs one; a rank that dies or hangs leaves the others blocked inside a
// collective of the step, which no MPI error reaches while the dead peer's socket stays open
// (a hung rank) or before the launcher's kill arrives. When the step in flight has run past the
// limit, the watchdog logs the stall naming this rank, calls `on_stall` (rank 0's server fails
// every open request with an error and turns /health unhealthy), waits for those answers to be
// written (kFlushS; kFlushAfterSignalS after a SIGTERM), and exits the process with status 3;
// mpirun then ends the other ranks.
//
// Limit (limit_s, a pure function): `--dist-timeout` when > 0; else (auto) 60 s until a step has
// completed, then max(5 s, 2 x the longest completed step). After expect_shutdown() (a SIGTERM
// from the launcher: mpirun's first move when another rank died) the limit is 2 x the longest step
// clamped to [kAfterSignalS, kAfterSignalMaxS]: mpirun sends SIGKILL 1 s after SIGTERM
// (odls_base_sigkill_timeout) and the answers must be out first (an operator's graceful SIGTERM
// to rank 0 does not call it).
// Threading: step_begin / step_end on the engine thread (two atomic stores each); the rest on
// any thread; the watchdog's own thread polls every 50 ms.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace dss {

class StepWatchdog {
 public:
  static constexpr double kAutoFirstS = 60.0;
  static constexpr double kAutoMinS = 5.0;
  static constexpr double kAfterSignalS = 0.3;
  static constexpr double kAfterSignalMaxS = 0.7;
  static constexpr double kFlushS = 1.0;
  static constexpr double kFlushAfterSignalS = 0.2;

  // The stall limit in seconds for a step in flight.
  static double limit_s(double configured_s, double longest_step_s, bool signalled);

  // rank: this process's rank in the world (for the log line).
  StepWatchdog(double configured_s, int rank);
  ~StepWatchdog();
  StepWatchdog(const StepWatchdog&) = delete;
  StepWatchdog& operator=(const StepWatchdog&) = delete;

  // Called once, with the reason, before the process exits (set before the first step).
  void set_on_stall(std::function<void(const std::string&)> f);
  void step_begin();
  void step_end();
  void expect_shutdown() { signalled_.store(true); }

 private:
  void run();

  const double configured_s_;
  const int rank_;
  std::function<void(const std::string&)> on_stall_;
  std::atomic<int64_t> step_start_ns_{0};  // 0: no step in flight
  std::atomic<int64_t> longest_ns_{0};
  std::atomic<int64_t> n_steps_{0};
  std::atomic<bool> signalled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dss
