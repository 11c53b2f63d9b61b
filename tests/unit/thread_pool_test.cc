// ThreadPool: every index of [0, n) is visited exactly once per call, ranges are grain-aligned and
// thread ids are in range, across many back-to-back calls (the spinning hand-off) and calls after
// the workers have gone to sleep (the condition-variable hand-off); a stalled thread leaves the
// rest of the job to the others (chunks are claimed, not preassigned); destruction of an idle pool
// returns. Run under TSan by `make test-tsan`.
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace dss {
namespace {

// Runs parallel_for(n, grain) and checks coverage; returns the number of distinct threads used.
int check_once(ThreadPool& pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::vector<std::atomic<int>> by_thread(static_cast<size_t>(pool.n_threads()));
  pool.parallel_for(n, grain, [&](int64_t b, int64_t e, int32_t i_thread) {
    EXPECT_GE(i_thread, 0);
    EXPECT_LT(i_thread, pool.n_threads());
    EXPECT_EQ(b % grain, 0) << "range start not aligned to the grain";
    EXPECT_LT(b, e);
    by_thread[static_cast<size_t>(i_thread)].fetch_add(1);
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "index " << i;
  int used = 0;
  for (auto& c : by_thread) used += c.load() > 0 ? 1 : 0;
  return used;
}

TEST(ThreadPool, CoversEveryIndexOnceWithAlignedRanges) {
  ThreadPool pool(3);
  for (int64_t n : {1, 2, 15, 16, 17, 100, 1000}) {
    for (int64_t grain : {1, 4, 16}) check_once(pool, n, grain);
  }
}

// The first claim stalls (a descheduled core): the other threads claim and finish every other
// chunk meanwhile, and the stalled thread, back, finds nothing left. The first claim is usually
// the caller's, but spinning workers can claim before it (often under TSan), so the stall goes to
// whichever thread runs first.
TEST(ThreadPool, StalledThreadLeavesTheRestToOthers) {
  ThreadPool pool(3);
  const int64_t n = 64;
  std::atomic<int> stalled_thread{-1};
  std::atomic<int64_t> by_stalled{0}, by_others{0};
  std::atomic<int> stalled_calls{0};
  pool.parallel_for(n, 1, [&](int64_t b, int64_t e, int32_t i_thread) {
    int expected = -1;
    if (stalled_thread.compare_exchange_strong(expected, i_thread)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    if (i_thread == stalled_thread.load()) {
      stalled_calls.fetch_add(1);
      by_stalled.fetch_add(e - b);
    } else {
      by_others.fetch_add(e - b);
    }
  });
  EXPECT_EQ(by_stalled.load() + by_others.load(), n);
  EXPECT_EQ(stalled_calls.load(), 1) << "the others left chunks to the stalled thread";
  EXPECT_LE(by_stalled.load(), n / (4 * 3)) << "the first claim: a quarter of n / threads";
}

TEST(ThreadPool, ManyBackToBackCalls) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  for (int i = 0; i < 20000; ++i) {
    pool.parallel_for(64, 16, [&](int64_t b, int64_t e, int32_t) { total.fetch_add(e - b); });
  }
  EXPECT_EQ(total.load(), int64_t{20000} * 64);
}

TEST(ThreadPool, WakesSleepingWorkers) {
  ThreadPool pool(4);
  for (int round = 0; round < 3; ++round) {
    // Longer than the workers' spin: they block on the condition variable.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    // Four one-index chunks, each held until four threads hold one: only completes (within the
    // 5 s limit) if every sleeping worker woke and claimed a chunk.
    std::atomic<int> arrived{0};
    std::atomic<bool> all_met{true};
    std::vector<std::atomic<int>> hits(4);
    pool.parallel_for(4, 1, [&](int64_t b, int64_t e, int32_t) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      arrived.fetch_add(1);
      const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (arrived.load() < 4) {
        if (std::chrono::steady_clock::now() > limit) {
          all_met = false;
          break;
        }
      }
    });
    EXPECT_TRUE(all_met.load()) << "round " << round << ": a worker did not wake";
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, SingleThreadRunsInline) {
  ThreadPool pool(1);
  const auto caller = std::this_thread::get_id();
  pool.parallel_for(100, 1, [&](int64_t b, int64_t e, int32_t i) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 100);
    EXPECT_EQ(i, 0);
  });
}

TEST(ThreadPool, DestroysIdleAndBusyPools) {
  { ThreadPool idle(3); }
  {
    ThreadPool used(3);
    check_once(used, 30, 1);
  }
  SUCCEED();
}

}  // namespace
}  // namespace dss
