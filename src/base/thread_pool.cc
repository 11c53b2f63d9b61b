#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>

#include "base/check.h"
#include "base/spin.h"

namespace dss {

ThreadPool::ThreadPool(int32_t n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int32_t i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  stop_ = true;
  generation_.fetch_add(1, std::memory_order_seq_cst);
  { std::lock_guard<std::mutex> lk(mu_); }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::work(int32_t i_thread) {
  const int64_t per_claim_div = 4 * int64_t{n_threads_};
  int64_t c0 = next_chunk_.load(std::memory_order_relaxed);
  for (;;) {
    const int64_t left = n_chunks_ - c0;
    if (left <= 0) return;
    const int64_t take = std::max<int64_t>(1, left / per_claim_div);
    if (!next_chunk_.compare_exchange_weak(c0, c0 + take, std::memory_order_relaxed)) continue;
    const int64_t begin = c0 * grain_, end = std::min(n_, (c0 + take) * grain_);
    thunk_(ctx_, begin, end, i_thread);
    c0 = next_chunk_.load(std::memory_order_relaxed);
  }
}

void ThreadPool::run(int64_t n, int64_t grain, Thunk thunk, void* ctx) {
  DSS_DCHECK(pending_.load() == 0, "ThreadPool::parallel_for is not reentrant");
  thunk_ = thunk;
  ctx_ = ctx;
  n_ = n;
  grain_ = grain;
  n_chunks_ = (n + grain - 1) / grain;
  next_chunk_.store(0, std::memory_order_relaxed);
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  // seq_cst pairs with the sleeper's seq_cst increment + generation load: either the worker sees
  // the new generation before blocking, or this sees it counted and wakes it (under mu_, so the
  // notify cannot fall between its predicate check and its wait). The job fields above are
  // published by this increment (workers read them after an acquire load of generation_).
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lk(mu_); }
    cv_.notify_all();
  }
  work(0);
  // Wait for the workers to finish their last claims (spin, then yield).
  spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; });
}

void ThreadPool::worker(int32_t i_thread) {
  using Clock = std::chrono::steady_clock;
  uint64_t seen = 0;
  for (;;) {
    // Spin ~2 ms for the next job before sleeping: the calls of a forward pass come back to back,
    // and between decode steps (sampling, scheduling) a sleeping worker costs a futex wake-up
    // (tens of microseconds on a VM) at the next call, during which the caller works alone.
    uint64_t gen = generation_.load(std::memory_order_acquire);
    if (gen == seen) {
      const auto deadline = Clock::now() + std::chrono::milliseconds(2);
      for (int spins = 1; gen == seen; ++spins) {
        cpu_relax();
        gen = generation_.load(std::memory_order_acquire);
        if (spins % 256 == 0 && Clock::now() > deadline) break;
      }
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lk(mu_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      cv_.wait(lk, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_) return;
    work(i_thread);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace dss
