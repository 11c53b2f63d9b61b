// Two-stage job lists in one ThreadPool dispatch.
//
// Every job j has a first stage over rows [0, rows_a) and a second stage over rows [0, rows_b),
// and every second-stage row of j needs all of j's first-stage rows (MoE: an expert's gate, up
// and SwiGLU over its d_ff rows, then down over d_model rows, each of which reads all d_ff).
// Run as two dispatches, the stages cost a barrier between them, and each thread's share of a
// stage is whatever its claims came to. run_two_stage instead runs n_parts parts in one dispatch:
//   - part p prefers the p-th of n_parts equal-cost contiguous (job, row) ranges of each stage
//     (cost: rows times the job's cost per row), cut at `grain` rows; it runs its first-stage
//     range job by job, each job whose first-stage rows are all in the range followed at once by
//     the job's share of the part's second-stage range, then the rest of its second-stage range
//     (the range's first job last: its first-stage rows are the previous part's last ones);
//   - rows of both stages are claimed per grain unit (an atomic per unit; a run of consecutive
//     units claimed together is one fn_a / fn_b call), so a part that reaches job j's second stage
//     first claims and runs the units of j nobody has claimed, then waits for those claimed by
//     other parts;
//   - a part that ends once every part has started steals: it walks the jobs from the last one
//     back, claiming the free units of each (first stage, then, the job's first stage finished,
//     second stage) from the job's end back, so it meets the parts still running from behind
//     instead of idling at the barrier while they finish (batch-16 decode on 2 threads: one thread
//     waited 6-10% of the experts' dispatch for the other).
// A claimed unit runs without waiting on anything, so every wait ends. Each unit's fn_a / fn_b
// call is made once; fn_a's writes are visible to every second-stage call of the job (release /
// acquire on the unit's state). Callers must make results independent of how rows are grouped
// into calls (row ranges are grain-aligned, the last one ends at rows_a / rows_b).
//
// A part's stages are long contiguous streams and both stages share one barrier. Balance comes
// from the parts' equal costs, the stealing at the end and, with n_parts above the thread count,
// from the pool's claims.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

#include "base/check.h"
#include "base/spin.h"
#include "base/thread_pool.h"

namespace dss {

// One job's two stages: rows and the relative cost of one row (any unit, per stage).
struct TwoStageShape {
  int64_t rows_a = 0, rows_b = 0;
  int64_t cost_a = 1, cost_b = 1;
};

// The claim state of both stages' units, reused across calls (allocated once: no allocation per
// step). capacity: the most units (sum over jobs of ceil(rows_a / grain) + ceil(rows_b / grain))
// and jobs of one call.
class TwoStageClaims {
 public:
  TwoStageClaims() = default;
  TwoStageClaims(int64_t max_units, int32_t max_jobs) { reserve(max_units, max_jobs); }
  // Sizes the state for calls of up to max_units units and max_jobs jobs (not during a call).
  void reserve(int64_t max_units, int32_t max_jobs) {
    units_ = std::make_unique<std::atomic<uint8_t>[]>(static_cast<size_t>(max_units));
    first_unit_ = std::make_unique<int64_t[]>(2 * (static_cast<size_t>(max_jobs) + 1));
    max_units_ = max_units;
    max_jobs_ = max_jobs;
  }

  enum : uint8_t { kFree = 0, kClaimed = 1, kDone = 2 };
  std::atomic<uint8_t>& unit(int64_t u) { return units_[static_cast<size_t>(u)]; }
  // Job j's units of the first (stage_b false) or second stage start here; first_unit(n_jobs):
  // the end of all units.
  int64_t& first_unit(int32_t j, bool stage_b = false) {
    return first_unit_[2 * static_cast<size_t>(j) + (stage_b ? 1 : 0)];
  }
  // One past job j's last unit of the stage (units lie job by job, first stage then second).
  int64_t units_end(int32_t j, bool stage_b) {
    return stage_b ? first_unit(j + 1) : first_unit(j, true);
  }
  int64_t max_units() const { return max_units_; }
  int32_t max_jobs() const { return max_jobs_; }

 private:
  std::unique_ptr<std::atomic<uint8_t>[]> units_;
  std::unique_ptr<int64_t[]> first_unit_;  // [max_jobs + 1][2]: job j's units of each stage
  int64_t max_units_ = 0;
  int32_t max_jobs_ = 0;
};

namespace two_stage_detail {

// Where cost c of a stage falls: job j and its row, rounded down to the grain (j == n_jobs: the
// end). Every part computes the same boundaries, so the ranges tile each stage exactly.
template <typename ShapeOf>
void locate(int32_t n_jobs, const ShapeOf& shape_of, bool stage_a, int64_t grain, int64_t c,
            int32_t& job, int64_t& row) {
  for (job = 0; job < n_jobs; ++job) {
    const TwoStageShape s = shape_of(job);
    const int64_t rows = stage_a ? s.rows_a : s.rows_b, cost = stage_a ? s.cost_a : s.cost_b;
    if (c < rows * cost) {
      row = c / cost / grain * grain;
      return;
    }
    c -= rows * cost;
  }
  row = 0;
}

}  // namespace two_stage_detail

// Calls fn_a(j, r0, r1) over the first-stage rows and fn_b(j, r0, r1) over the second-stage rows
// of jobs [0, n_jobs) (shape_of(j) -> TwoStageShape), fn_b of job j only after every fn_a of j
// returned, in one dispatch of n_parts parts (above). fn_a / fn_b are called from the pool's
// threads concurrently on disjoint ranges.
// Long by design: one scheduling algorithm (plan the parts, run a part, steal) over claim state
// that all three phases share; split, they would pass a dozen locals between them.
template <typename ShapeOf, typename FnA, typename FnB>
void run_two_stage(ThreadPool& pool, TwoStageClaims& claims, int32_t n_jobs, ShapeOf shape_of,
                   int64_t grain, int32_t n_parts, FnA fn_a, FnB fn_b) {
  using two_stage_detail::locate;
  DSS_CHECK(n_jobs <= claims.max_jobs(), "run_two_stage: more jobs than the claims hold");
  DSS_CHECK(n_parts >= 1 && grain >= 1, "run_two_stage: ", n_parts, " parts, grain ", grain);
  int64_t total_a = 0, total_b = 0, n_units = 0;
  for (int32_t j = 0; j < n_jobs; ++j) {
    const TwoStageShape s = shape_of(j);
    DSS_CHECK(s.rows_a >= 0 && s.rows_b >= 0 && s.cost_a > 0 && s.cost_b > 0, "run_two_stage: job ",
              j, " has negative rows or a cost <= 0");
    total_a += s.rows_a * s.cost_a;
    total_b += s.rows_b * s.cost_b;
    claims.first_unit(j) = n_units;
    n_units += (s.rows_a + grain - 1) / grain;
    claims.first_unit(j, true) = n_units;
    n_units += (s.rows_b + grain - 1) / grain;
  }
  claims.first_unit(n_jobs) = n_units;
  DSS_CHECK(n_units <= claims.max_units(), "run_two_stage: more units than the claims hold");
  // Published to the workers by the dispatch (ThreadPool::run's release of the job).
  for (int64_t u = 0; u < n_units; ++u)
    claims.unit(u).store(TwoStageClaims::kFree, std::memory_order_relaxed);

  auto try_claim = [&](int64_t unit) {  // a plain load first: most units a waiter sees are done
    std::atomic<uint8_t>& state = claims.unit(unit);
    uint8_t expected = TwoStageClaims::kFree;
    return state.load(std::memory_order_relaxed) == TwoStageClaims::kFree &&
           state.compare_exchange_strong(expected, TwoStageClaims::kClaimed,
                                         std::memory_order_relaxed);
  };
  // Runs units [u, v) of job j's stage (claimed by the caller) and marks them done.
  auto run_claimed = [&](int32_t j, bool stage_b, int64_t u, int64_t v) {
    const int64_t base = claims.first_unit(j, stage_b);
    const TwoStageShape s = shape_of(j);
    if (stage_b) {
      fn_b(j, u * grain, std::min(v * grain, s.rows_b));
    } else {
      fn_a(j, u * grain, std::min(v * grain, s.rows_a));
    }
    for (int64_t w = u; w < v; ++w)
      claims.unit(base + w).store(TwoStageClaims::kDone, std::memory_order_release);
  };
  // Claims the free units of [u0, u1) of job j's stage in runs, first to last, and runs each run.
  // The second stage's only after the job's first stage finished (the caller's duty).
  auto run_units = [&](int32_t j, int64_t u0, int64_t u1, bool stage_b = false) {
    const int64_t base = claims.first_unit(j, stage_b);
    for (int64_t u = u0; u < u1;) {
      if (!try_claim(base + u)) {
        ++u;
        continue;
      }
      int64_t v = u + 1;
      while (v < u1 && try_claim(base + v)) ++v;
      run_claimed(j, stage_b, u, v);
      u = v;
    }
  };
  // The same from the last unit back (a run still runs its rows in order): the stealer's order.
  auto run_units_back = [&](int32_t j, bool stage_b) {
    const int64_t base = claims.first_unit(j, stage_b);
    const int64_t n = claims.units_end(j, stage_b) - base;
    for (int64_t v = n; v > 0;) {
      if (!try_claim(base + v - 1)) {
        --v;
        continue;
      }
      int64_t u = v - 1;
      while (u > 0 && try_claim(base + u - 1)) --u;
      run_claimed(j, stage_b, u, v);
      v = u;
    }
  };
  // Whether job j's second stage has a unit nobody claimed.
  auto free_b = [&](int32_t j) {
    for (int64_t u = claims.first_unit(j, true); u < claims.units_end(j, true); ++u) {
      if (claims.unit(u).load(std::memory_order_relaxed) == TwoStageClaims::kFree) return true;
    }
    return false;
  };
  // Every first-stage unit of job j done: the free ones run here, claimed ones are waited for.
  auto finish_first_stage = [&](int32_t j) {
    const int64_t base = claims.first_unit(j), n = claims.units_end(j, false) - base;
    run_units(j, 0, n);
    for (int64_t u = 0; u < n; ++u) {
      spin_until([&] {
        return claims.unit(base + u).load(std::memory_order_acquire) == TwoStageClaims::kDone;
      });
    }
  };

  std::atomic<int32_t> parts_started{0};
  auto run_part = [&](int64_t p) {
    parts_started.fetch_add(1, std::memory_order_relaxed);
    int32_t ja0, ja1, jb0, jb1;
    int64_t ra0, ra1, rb0, rb1;
    locate(n_jobs, shape_of, true, grain, total_a * p / n_parts, ja0, ra0);
    locate(n_jobs, shape_of, true, grain, total_a * (p + 1) / n_parts, ja1, ra1);
    locate(n_jobs, shape_of, false, grain, total_b * p / n_parts, jb0, rb0);
    locate(n_jobs, shape_of, false, grain, total_b * (p + 1) / n_parts, jb1, rb1);
    auto second = [&](int32_t j) {
      const int64_t b = j == jb0 ? rb0 : 0;
      const int64_t e = j == jb1 ? rb1 : shape_of(j).rows_b;
      if (b >= e) return;
      finish_first_stage(j);
      run_units(j, b / grain, (e + grain - 1) / grain, true);
    };
    // Whether every first-stage row of job j is in this part's range (the range ends before row
    // ra1 of job ja1, so job ja1 never is).
    auto whole_a = [&](int32_t j) {
      return j >= ja0 && j < ja1 && (j > ja0 || ra0 == 0) && shape_of(j).rows_a > 0;
    };
    for (int32_t j = ja0; j <= ja1 && j < n_jobs; ++j) {
      const int64_t b = j == ja0 ? ra0 : 0;
      const int64_t e = j == ja1 ? ra1 : shape_of(j).rows_a;
      if (b < e) run_units(j, b / grain, (e + grain - 1) / grain);
      // A whole job's second-stage share right after its first stage: no rows of another part's
      // range to wait for (only units another part claimed early, if any), and one job's rows of
      // both stages are read as one stream (MoE: an expert's gate, up and down lie back to back
      // in the model's weight arena).
      if (whole_a(j) && j >= jb0 && j <= jb1) second(j);
    }
    for (int32_t j = jb0 + 1; j <= jb1 && j < n_jobs; ++j) {
      if (!whole_a(j)) second(j);
    }
    if (jb0 < n_jobs && !whole_a(jb0)) second(jb0);
  };
  // Once every part has started, what is left is the running parts' unclaimed units: take them
  // from the end of the job list back (the parts run forward). Before that (a thread that ends
  // its part while another part waits for a thread) the pool hands out the next part instead.
  auto steal = [&] {
    if (parts_started.load(std::memory_order_relaxed) < n_parts) return;
    for (int32_t j = n_jobs - 1; j >= 0; --j) {
      run_units_back(j, false);
      if (!free_b(j)) continue;
      finish_first_stage(j);
      run_units_back(j, true);
    }
  };
  pool.parallel_for(n_parts, 1, [&](int64_t p0, int64_t p1, int32_t) {
    for (int64_t p = p0; p < p1; ++p) run_part(p);
    steal();
  });
}

}  // namespace dss
