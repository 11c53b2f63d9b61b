#include "base/thread_pool.h"

#include <algorithm>

#include "base/check.h"

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

void ThreadPool::range(int32_t i_thread, int64_t& begin, int64_t& end) const {
  const int64_t n_chunks = (n_ + grain_ - 1) / grain_;
  const int64_t per = n_chunks / n_threads_, extra = n_chunks % n_threads_;
  const int64_t c0 = i_thread * per + std::min<int64_t>(i_thread, extra);
  const int64_t c1 = c0 + per + (i_thread < extra ? 1 : 0);
  begin = std::min(n_, c0 * grain_);
  end = std::min(n_, c1 * grain_);
}

void ThreadPool::run(int64_t n, int64_t grain, Thunk thunk, void* ctx) {
  DSS_DCHECK(pending_.load() == 0, "ThreadPool::parallel_for is not reentrant");
  thunk_ = thunk;
  ctx_ = ctx;
  n_ = n;
  grain_ = grain;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  // seq_cst pairs with the sleeper's seq_cst increment + generation load: either the worker sees
  // the new generation before blocking, or this sees it counted and wakes it (under mu_, so the
  // notify cannot fall between its predicate check and its wait).
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lk(mu_); }
    cv_.notify_all();
  }
  int64_t b, e;
  range(0, b, e);
  if (b < e) thunk(ctx, b, e, 0);
  // Wait for the workers (they finish quickly; spin, then yield).
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins > 2000) std::this_thread::yield();
  }
}

void ThreadPool::worker(int32_t i_thread) {
  uint64_t seen = 0;
  for (;;) {
    // Spin a little for the next job before sleeping (steps come back to back).
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spins = 0; gen == seen && spins < 20000; ++spins)
      gen = generation_.load(std::memory_order_acquire);
    if (gen == seen) {
      std::unique_lock<std::mutex> lk(mu_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      cv_.wait(lk, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_) return;
    int64_t b, e;
    range(i_thread, b, e);
    if (b < e) thunk_(ctx_, b, e, i_thread);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace dss
