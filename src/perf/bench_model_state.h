// What one `bench-model` run measured and derived (bench_model.h), shared by the steps that
// measure and build the JSON (bench_model.cc) and the tables printed from them
// (bench_model_tables.cc). Internal to src/perf.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/json.h"
#include "kernels/cpu/cpu_features.h"
#include "model/runtime/model.h"
#include "perf/active_bytes.h"
#include "perf/bench_model_options.h"
#include "perf/decode_flops.h"
#include "perf/spec_runs.h"
#include "perf/stats.h"
#include "tensor/dtype.h"

namespace dss::perf {

// One decode batch size (the last run of a size listed twice).
struct BatchRow {
  int32_t b;
  double tok_s, routed_reads_per_step, step_bytes;  // means over the timed steps
  double roofline_tok_s = 0;  // b x the run's highest bandwidth sample / step_bytes
  StepFlops flops;            // per step (decode_step_flops)
  StepBound bound;            // at the run's highest bandwidth sample and the peak
};

struct BenchModelState {
  const Model& m;
  const BenchModelOptions& a;
  const cpu::CpuDescription& cpu_info;
  ActiveBytes bytes;  // batch 1, per token
  DType kv_dtype;
  OrderedJson j;  // the result, keys in the order they are measured

  double bw_before = 0, bw_after = 0;  // GB/s right before and after all the runs
  double bw = 0;                       // the run's highest bandwidth sample: the rooflines'
  // Arithmetic peaks (GFLOP/s) measured before and after the prefill runs; the higher of each.
  double bf16_peak = 0, fma_peak = 0;
  std::vector<double> bf16_peaks, fma_peaks;
  std::vector<std::pair<std::string, Stat>> rows;          // (test name, tok/s)
  std::vector<std::pair<int32_t, double>> prefill_gflops;  // (n, GFLOP/s at the mean tok/s)
  double bs1_tok_s = 0;                                    // 0: batch 1 not in the run
  std::vector<double> bw_bs1, pct_bs1;  // samples around each repetition; its paired percentage
  double pct_bs1_median = 0;            // percentile(.., 50): numpy's median
  std::vector<BatchRow> batch_rows;     // one per batch size
  std::vector<std::pair<int32_t, std::pair<double, Stat>>> ctx;  // (C, (prefill s, TPOT ms))
  double roofline = 0;                                           // batch 1, tok/s at bw
  bool bf16_arith = false;          // the matmuls run the bf16 dot (else f32 FMA): the bound's peak
  double peak = 0;                  // bf16_peak or fma_peak
  double bs1_bound_s = 0;           // batch 1's bound (s per step); 0: batch 1 not in the run
  std::vector<SpecStepTimes> spec;  // --speculative-algorithm nextn, per spec batch
};

// The tables of a finished run on stdout (without --json).
void print_bench_model_tables(const BenchModelState& s);

}  // namespace dss::perf
