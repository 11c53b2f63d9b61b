#include "engine/step_watchdog.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <utility>

#include "base/log.h"
#include "base/str_cat.h"

namespace dss {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

double StepWatchdog::limit_s(double configured_s, double longest_step_s, bool signalled) {
  if (signalled) return std::clamp(2.0 * longest_step_s, kAfterSignalS, kAfterSignalMaxS);
  if (configured_s > 0) return configured_s;
  if (longest_step_s <= 0) return kAutoFirstS;
  return std::max(kAutoMinS, 2.0 * longest_step_s);
}

StepWatchdog::StepWatchdog(double configured_s, int rank)
    : configured_s_(configured_s), rank_(rank), thread_([this] { run(); }) {}

StepWatchdog::~StepWatchdog() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void StepWatchdog::set_on_stall(std::function<void(const std::string&)> f) {
  std::lock_guard<std::mutex> lk(mu_);
  on_stall_ = std::move(f);
}

void StepWatchdog::step_begin() { step_start_ns_.store(now_ns(), std::memory_order_release); }

void StepWatchdog::step_end() {
  const int64_t d = now_ns() - step_start_ns_.load(std::memory_order_relaxed);
  if (d > longest_ns_.load(std::memory_order_relaxed))
    longest_ns_.store(d, std::memory_order_relaxed);
  n_steps_.fetch_add(1, std::memory_order_relaxed);
  step_start_ns_.store(0, std::memory_order_release);
}

void StepWatchdog::run() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!cv_.wait_for(lk, std::chrono::milliseconds(50), [this] { return stop_; })) {
    const int64_t start = step_start_ns_.load(std::memory_order_acquire);
    if (start == 0) continue;
    const double stalled = static_cast<double>(now_ns() - start) * 1e-9;
    const bool signalled = signalled_.load();
    const double limit =
        limit_s(configured_s_, static_cast<double>(longest_ns_.load()) * 1e-9, signalled);
    if (stalled <= limit) continue;
    const std::string why =
        str_cat("rank ", rank_, ": step ", n_steps_.load() + 1, " stalled for ", stalled,
                " s (limit ", limit, " s", signalled ? ", after SIGTERM" : "",
                ") in a collective: another rank of the parallel job is gone or hung; exiting");
    auto on_stall = on_stall_;
    lk.unlock();
    log_error(why);
    if (on_stall) {
      on_stall(why);
      std::this_thread::sleep_for(
          std::chrono::duration<double>(signalled ? kFlushAfterSignalS : kFlushS));
    }
    std::_Exit(3);
  }
}

}  // namespace dss
