// ThreadPool: a persistent pool for data-parallel loops inside the forward pass.
//
// parallel_for(n, grain, fn) splits [0, n) into grain-aligned chunks that the threads (the
// caller's included) claim as they go, guided: each claim takes about a quarter of what is left
// divided by the thread count (at least one chunk), so a thread slowed by its core (a shared VM,
// an interrupt) or by harder rows leaves the rest to the others instead of holding everyone at the
// barrier. fn may therefore be called several times on one thread, with any disjoint ranges;
// results must not depend on which thread runs a range. No allocation and no std::function per
// call: `fn` is called through a plain function pointer with a pointer to the caller's lambda.
// Dispatch is lock-free while workers spin (they spin ~2 ms after each job, so the back-to-back
// calls of a forward pass cost an atomic store and a cache-line transfer); idle workers sleep on
// a condition variable and are woken only when one is asleep.
// Threading: parallel_for must be called from one thread at a time (the engine thread);
// it is not reentrant (fn must not call parallel_for on the same pool).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace dss {

class ThreadPool {
 public:
  // n_threads >= 1 includes the calling thread (n_threads - 1 workers are started).
  explicit ThreadPool(int32_t n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int32_t n_threads() const { return n_threads_; }

  // Calls fn(begin, end, i_thread) on disjoint ranges covering [0, n), possibly several per
  // thread; ranges are aligned to `grain` (the last may be shorter). A single chunk runs inline on
  // the caller.
  template <typename Fn>
  void parallel_for(int64_t n, int64_t grain, Fn&& fn) {
    if (n <= 0) return;
    const int64_t n_chunks = (n + grain - 1) / grain;
    if (n_threads_ == 1 || n_chunks == 1) {
      fn(int64_t{0}, n, 0);
      return;
    }
    run(n, grain, &invoke<std::remove_reference_t<Fn>>, &fn);
  }

 private:
  using Thunk = void (*)(void* ctx, int64_t begin, int64_t end, int32_t i_thread);
  template <typename F>
  static void invoke(void* ctx, int64_t begin, int64_t end, int32_t i_thread) {
    (*static_cast<F*>(ctx))(begin, end, i_thread);
  }
  void run(int64_t n, int64_t grain, Thunk thunk, void* ctx);
  // Claims and runs chunks of the current job until none is left.
  void work(int32_t i_thread);
  void worker(int32_t i_thread);

  int32_t n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int32_t> pending_{0};
  std::atomic<int32_t> sleepers_{0};  // workers blocked (or about to block) on cv_
  bool stop_ = false;                 // written before generation_ is bumped, like the job
  // The current job (written before generation_ is bumped; read after it is seen).
  Thunk thunk_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0, grain_ = 1, n_chunks_ = 0;
  alignas(64) std::atomic<int64_t> next_chunk_{0};  // the first unclaimed chunk of the job
};

}  // namespace dss
