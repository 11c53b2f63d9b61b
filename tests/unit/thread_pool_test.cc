// ThreadPool: every index of [0, n) is visited exactly once per call, ranges are grain-aligned and
// thread ids are in range, across many back-to-back calls (the spinning hand-off) and calls after
// the workers have gone to sleep (the condition-variable hand-off); destruction of an idle pool
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
  for (auto& c : by_thread) {
    EXPECT_LE(c.load(), 1) << "a thread got two ranges";
    used += c.load() > 0 ? 1 : 0;
  }
  return used;
}

TEST(ThreadPool, CoversEveryIndexOnceWithAlignedRanges) {
  ThreadPool pool(3);
  for (int64_t n : {1, 2, 15, 16, 17, 100, 1000}) {
    for (int64_t grain : {1, 4, 16}) check_once(pool, n, grain);
  }
  EXPECT_EQ(check_once(pool, 3 * 16, 16), 3) << "three chunks of 16 go to three threads";
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
    EXPECT_EQ(check_once(pool, 4, 1), 4);
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
