// run_two_stage: every first- and second-stage row of every job is covered exactly once by
// grain-aligned calls; a job's second-stage calls start only after all its first-stage calls
// returned; parts whose dependencies belong to a stalled or absent thread still finish (the
// waiting part runs unclaimed units itself, and waits only for units that are running). Run
// under TSan by `make test-tsan`.
#include "base/two_stage_jobs.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace dss {
namespace {

struct Check {
  std::vector<TwoStageShape> shapes;
  std::vector<std::vector<std::atomic<int>>> hits_a, hits_b;
  std::vector<std::atomic<int64_t>> rows_a_done;  // per job, rows whose fn_a call returned
  std::atomic<int> early_b{0};                    // fn_b calls that saw unfinished first stages
  std::atomic<int> misaligned{0};

  explicit Check(std::vector<TwoStageShape> s) : shapes(std::move(s)) {
    hits_a = std::vector<std::vector<std::atomic<int>>>(shapes.size());
    hits_b = std::vector<std::vector<std::atomic<int>>>(shapes.size());
    for (size_t j = 0; j < shapes.size(); ++j) {
      hits_a[j] = std::vector<std::atomic<int>>(static_cast<size_t>(shapes[j].rows_a));
      hits_b[j] = std::vector<std::atomic<int>>(static_cast<size_t>(shapes[j].rows_b));
    }
    rows_a_done = std::vector<std::atomic<int64_t>>(shapes.size());
  }

  std::atomic<bool> stalled{false};  // the stall below happened

  // stall_first_a: the first fn_a call (on whichever thread) sleeps holding its claims (a
  // descheduled core).
  void run(ThreadPool& pool, int64_t grain, int32_t n_parts, bool stall_first_a) {
    int64_t units = 0;
    for (const TwoStageShape& s : shapes)
      units += (s.rows_a + grain - 1) / grain + (s.rows_b + grain - 1) / grain;
    TwoStageClaims claims(units, static_cast<int32_t>(shapes.size()));
    std::atomic<bool> first_a_seen{!stall_first_a};
    run_two_stage(
        pool, claims, static_cast<int32_t>(shapes.size()),
        [&](int32_t j) { return shapes[static_cast<size_t>(j)]; }, grain, n_parts,
        [&](int32_t j, int64_t r0, int64_t r1) {
          if (!first_a_seen.exchange(true)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(150));
            stalled.store(true);
          }
          if (r0 % grain != 0 || r0 >= r1 || r1 > shapes[static_cast<size_t>(j)].rows_a)
            misaligned.fetch_add(1);
          for (int64_t r = r0; r < r1; ++r)
            hits_a[static_cast<size_t>(j)][static_cast<size_t>(r)].fetch_add(1);
          rows_a_done[static_cast<size_t>(j)].fetch_add(r1 - r0);
        },
        [&](int32_t j, int64_t r0, int64_t r1) {
          const TwoStageShape& s = shapes[static_cast<size_t>(j)];
          if (rows_a_done[static_cast<size_t>(j)].load() != s.rows_a) early_b.fetch_add(1);
          if (r0 % grain != 0 || r0 >= r1 || r1 > s.rows_b) misaligned.fetch_add(1);
          for (int64_t r = r0; r < r1; ++r)
            hits_b[static_cast<size_t>(j)][static_cast<size_t>(r)].fetch_add(1);
        });
  }

  void expect_all_once(const char* what) {
    EXPECT_EQ(early_b.load(), 0) << what << ": second stage before its first stage finished";
    EXPECT_EQ(misaligned.load(), 0) << what << ": a range not grain-aligned or out of bounds";
    for (size_t j = 0; j < shapes.size(); ++j) {
      for (size_t r = 0; r < hits_a[j].size(); ++r)
        ASSERT_EQ(hits_a[j][r].load(), 1) << what << ": job " << j << " first-stage row " << r;
      for (size_t r = 0; r < hits_b[j].size(); ++r)
        ASSERT_EQ(hits_b[j][r].load(), 1) << what << ": job " << j << " second-stage row " << r;
    }
  }
};

// MoE-like lists: 7 experts of 512 / 1024 rows at 1 token, a shared one with more tokens, ragged
// rows (not grain multiples), a job with no second-stage rows, jobs with no first-stage rows,
// and an empty list.
std::vector<std::vector<TwoStageShape>> job_lists() {
  std::vector<std::vector<TwoStageShape>> lists;
  lists.push_back(std::vector<TwoStageShape>(7, TwoStageShape{512, 1024, 2 * 1024 * 5, 512 * 5}));
  lists.back().push_back({512, 1024, 2 * 1024 * 20, 512 * 20});
  lists.push_back({{300, 200, 3, 1}, {1, 1, 1, 1}, {129, 0, 2, 1}, {1000, 777, 1, 5}});
  lists.push_back({{128, 128, 1, 1}});
  lists.push_back({{0, 300, 1, 1}, {256, 256, 1, 1}, {0, 0, 1, 1}});  // jobs without a first stage
  lists.push_back({});                                                // no jobs at all
  return lists;
}

TEST(TwoStageJobs, CoversEveryRowOnceAndOrdersTheStages) {
  ThreadPool pool(3);
  for (const auto& shapes : job_lists()) {
    for (int32_t n_parts : {1, 2, 3, 5, 12}) {
      for (int64_t grain : {1, 64, 128}) {
        Check c(shapes);
        c.run(pool, grain, n_parts, false);
        c.expect_all_once("3 threads");
      }
    }
  }
}

// A thread stalls in the first first-stage call while holding its claims: the other parts run
// their own units, help with the unclaimed ones and wait for the stalled run. With one thread
// (parts one after another), part 0's second stage needs units of parts not yet started, which it
// runs itself.
TEST(TwoStageJobs, StalledOrSequentialPartsStillFinishInOrder) {
  ThreadPool pool3(3), pool1(1);
  for (const auto& shapes : job_lists()) {
    for (int32_t n_parts : {2, 3, 8}) {
      Check stalled(shapes);
      stalled.run(pool3, 128, n_parts, true);
      stalled.expect_all_once("stalled thread");
      bool any_first_stage = false;
      for (const TwoStageShape& sh : shapes) any_first_stage = any_first_stage || sh.rows_a > 0;
      EXPECT_EQ(stalled.stalled.load(), any_first_stage) << "the stall did not happen";
      Check sequential(shapes);
      sequential.run(pool1, 128, n_parts, false);
      sequential.expect_all_once("one thread");
    }
  }
}

// The order of the calls, one thread (parts one after another): 7 experts of 512 / 1024 rows at
// 1 token in 2 parts, grain 128 (batch-1 MoE). Each part runs a whole job's second-stage share
// right after its first stage; the job split between the parts (3: first-stage rows 0-255 in
// part 0, 256-511 in part 1; second-stage rows 0-511 / 512-1023) has its second stage after the
// part's other jobs, part 0 running part 1's unclaimed first-stage rows of it first.
TEST(TwoStageJobs, WholeJobsRunBothStagesBackToBack) {
  ThreadPool pool(1);
  const std::vector<TwoStageShape> shapes(7, TwoStageShape{512, 1024, 2 * 1024 * 5, 512 * 5});
  TwoStageClaims claims(7 * (4 + 8), 7);
  using Call = std::array<int64_t, 4>;  // stage (0: first, 1: second), job, r0, r1
  std::vector<Call> calls;
  run_two_stage(
      pool, claims, 7, [&](int32_t j) { return shapes[static_cast<size_t>(j)]; }, 128, 2,
      [&](int32_t j, int64_t r0, int64_t r1) {
        calls.push_back({0, j, r0, r1});
      },
      [&](int32_t j, int64_t r0, int64_t r1) {
        calls.push_back({1, j, r0, r1});
      });
  const std::vector<Call> expected = {
      {0, 0, 0, 512},  {1, 0, 0, 1024}, {0, 1, 0, 512},  {1, 1, 0, 1024},
      {0, 2, 0, 512},  {1, 2, 0, 1024}, {0, 3, 0, 256},  {0, 3, 256, 512},
      {1, 3, 0, 512},  {0, 4, 0, 512},  {1, 4, 0, 1024}, {0, 5, 0, 512},
      {1, 5, 0, 1024}, {0, 6, 0, 512},  {1, 6, 0, 1024}, {1, 3, 512, 1024}};
  EXPECT_EQ(calls, expected);
}

// A part that ends while another runs takes the other's unclaimed units from the end of the job
// list back: 8 jobs in 2 parts on 2 threads (part 0: jobs 0-3, part 1: jobs 4-7). Part 0 waits at
// its first call until part 1 has started (so the parts run on different threads), part 1 waits
// in job 4's first stage until job 5's second stage has run (5 s at most: without stealing it
// runs only after): part 0's thread then has run jobs 7, 6 and 5, both stages, whole.
TEST(TwoStageJobs, AnEndedPartStealsFromTheEnd) {
  ThreadPool pool(2);
  const std::vector<TwoStageShape> shapes(8, TwoStageShape{256, 256, 1, 1});
  TwoStageClaims claims(8 * (2 + 2), 8);
  std::atomic<bool> part1_started{false}, rendezvous_timed_out{false};
  std::vector<std::atomic<std::thread::id>> thread_a(8), thread_b(8);
  std::vector<std::atomic<int64_t>> rows_b(8);
  std::vector<int32_t> order_b;  // jobs whose second stage ran on part 0's thread after job 3
  std::atomic<bool> part0_done{false};
  run_two_stage(
      pool, claims, 8, [&](int32_t j) { return shapes[static_cast<size_t>(j)]; }, 128, 2,
      [&](int32_t j, int64_t, int64_t) {
        if (j == 0) {
          const auto t0 = std::chrono::steady_clock::now();
          while (!part1_started.load()) {
            if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(5)) {
              rendezvous_timed_out.store(true);
              break;
            }
            std::this_thread::yield();
          }
        }
        if (j == 4 && !part1_started.exchange(true)) {
          const auto t0 = std::chrono::steady_clock::now();
          while (rows_b[5].load() < 256 &&
                 std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)) {
            std::this_thread::yield();
          }
        }
        thread_a[static_cast<size_t>(j)].store(std::this_thread::get_id());
      },
      [&](int32_t j, int64_t r0, int64_t r1) {
        if (std::this_thread::get_id() == thread_a[0].load() && part0_done.load())
          order_b.push_back(j);
        if (j == 3) part0_done.store(true);
        thread_b[static_cast<size_t>(j)].store(std::this_thread::get_id());
        rows_b[static_cast<size_t>(j)].fetch_add(r1 - r0);
      });
  ASSERT_FALSE(rendezvous_timed_out.load()) << "the two parts did not run at the same time";
  const std::thread::id part0 = thread_a[0].load();
  EXPECT_NE(thread_a[4].load(), part0) << "job 4's stalled first stage ran on part 1's thread";
  for (size_t j = 5; j < 8; ++j) {
    EXPECT_EQ(thread_a[j].load(), part0) << "job " << j << "'s first stage was not stolen";
    EXPECT_EQ(thread_b[j].load(), part0) << "job " << j << "'s second stage was not stolen";
  }
  for (size_t j = 0; j < 8; ++j) EXPECT_EQ(rows_b[j].load(), 256) << "job " << j;
  // Stolen from the end back: 7, 6, 5 (then possibly part of 4, once its first stage is done).
  ASSERT_GE(order_b.size(), 3u);
  EXPECT_EQ(std::vector<int32_t>(order_b.begin(), order_b.begin() + 3),
            (std::vector<int32_t>{7, 6, 5}));
}

// A job list above the claims' capacity is an invariant failure, not a silent overrun.
TEST(TwoStageJobsDeathTest, ChecksTheClaimsCapacity) {
  ThreadPool pool(1);
  TwoStageClaims claims(3, 1);
  auto shape = [](int32_t) { return TwoStageShape{512, 128, 1, 1}; };
  auto none = [](int32_t, int64_t, int64_t) {};
  EXPECT_DEATH(run_two_stage(pool, claims, 1, shape, 128, 1, none, none), "more units");
  EXPECT_DEATH(run_two_stage(pool, claims, 2, shape, 128, 1, none, none), "more jobs");
  // 4 first-stage units fit 4, not with the second stage's 1.
  TwoStageClaims four(4, 1);
  EXPECT_DEATH(run_two_stage(pool, four, 1, shape, 128, 1, none, none), "more units");
}

}  // namespace
}  // namespace dss
