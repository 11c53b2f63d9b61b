#include "perf/bench_model.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

#include "base/check.h"
#include "base/percentile.h"
#include "base/phase_timer.h"
#include "base/rng.h"
#include "base/str_cat.h"
#include "kv/kv_cache.h"
#include "perf/bench_model_state.h"
#include "perf/compute_peak.h"
#include "perf/model_runs.h"
#include "perf/phase_report.h"
#include "perf/prefill_flops.h"
#include "perf/progress.h"
#include "perf/read_bandwidth.h"
#include "perf/roofline.h"

namespace dss::perf {

namespace {

using State = BenchModelState;

// The run's setting: model, CPU, threads and the flags that shape the figures.
void describe_run(State& s) {
  const BenchModelOptions& a = s.a;
  const cpu::CpuDescription& cpu = s.cpu_info;
  OrderedJson& j = s.j;
  j["model"] = a.model;
  j["arch"] = model_arch_name(s.m.config().arch);
  j["cpu"] = {{"vendor", cpu.vendor},    {"brand", cpu.brand},       {"family", cpu.family},
              {"model", cpu.model},      {"stepping", cpu.stepping}, {"target", cpu.target},
              {"bf16_dot", cpu.bf16_dot}};
  j["threads"] = s.m.n_threads();
  if (s.m.shard().sharded()) {
    j["tp_size"] = s.m.shard().size;
    j["expert_parallel"] = s.m.shard().expert_parallel;
  }
  j["repetitions"] = a.repetitions;
  j["weight_dtype"] =
      a.weight_dtype == WeightDType::kAsStored ? "stored" : to_string(a.weight_dtype);
  j["weight_layout"] = to_string(a.weight_layout);
  j["lm_head_dtype"] =
      a.lm_head_dtype == WeightDType::kAsStored ? "stored" : to_string(a.lm_head_dtype);
  j["matmul_dtype"] = s.m.matmul_bf16() ? "bf16" : "f32";
  // How that arithmetic was chosen: the flag, and for auto the two measured (or cached) rates.
  const MatmulChoice& mc = s.m.matmul_choice();
  j["matmul_dtype_flag"] = to_string(a.matmul_dtype);
  j["matmul_choice"] = {{"source", mc.source},
                        {"f32_gflops", mc.f32_gflops},
                        {"bf16_gflops", mc.bf16_gflops},
                        {"probe_s", mc.probe_s},
                        {"cpu", mc.cpu},
                        {"cache_path", mc.cache_path},
                        {"f32_gemv_gflops", mc.rates.f32_gemv},
                        {"f32_gemm_gflops", mc.rates.f32_gemm},
                        {"bf16_gemv_gflops", mc.rates.bf16_gemv},
                        {"bf16_gemm_gflops", mc.rates.bf16_gemm}};
  j["kv_cache_dtype"] = kv_dtype_name(s.kv_dtype);
  j["decode_tokens"] = a.decode_tokens;
  j["decode_token_ids"] = "fixed random";
  if (!a.decode_context.empty()) j["context_fill"] = a.context_fill;
  if (a.ab_variants > 1) j["ab_variants"] = a.ab_variants;  // the tok/s mix the variants
}

// One sample of each arithmetic peak; the higher of each pair counts (the lower, conservative
// percentage: a slow spell of the VM during one measurement would inflate it).
void measure_peaks(State& s) {
  const int32_t n_threads = s.m.n_threads();
  progress("bench-model: measuring the bf16-dot and FMA peaks (%d threads)\n", n_threads);
  s.bf16_peaks.push_back(measure_bf16_dot_gflops(n_threads));
  s.fma_peaks.push_back(measure_fma_gflops(n_threads));
  s.bf16_peak = std::max(s.bf16_peak, s.bf16_peaks.back());
  s.fma_peak = std::max(s.fma_peak, s.fma_peaks.back());
}

// Prefill is compute-bound: its FLOP rate against the bf16-dot peak (issue #7's denominator;
// what --matmul-dtype bf16 runs on) and the f32 FMA peak, both measured here and now, before
// and after the prefill runs.
void run_prefill_tests(State& s, Rng& rng) {
  const BenchModelOptions& a = s.a;
  OrderedJson& j = s.j;
  const bool run_prefill = !a.context_only && !a.prefill.empty();
  // --prefill is never empty (validate), so the peaks are there for the decode batches' bounds
  // (unless --context-only, which runs no batches).
  if (run_prefill) measure_peaks(s);
  for (int32_t n : a.context_only ? std::vector<int32_t>{} : a.prefill) {
    progress("bench-model: pp%d\n", n);
    const Stat st = stat_of(bench_prefill(s.m, a, n, rng));
    report_phases(j, str_cat("pp", n));
    s.rows.emplace_back(str_cat("pp", n), st);
    j[str_cat("prefill_", n, "_tok_s")] = st.mean;
    j[str_cat("prefill_", n, "_tok_s_stddev")] = st.stddev;
    const double gflops = prefill_flops(s.m.config(), n) / n * st.mean * 1e-9;
    s.prefill_gflops.emplace_back(n, gflops);
    j[str_cat("prefill_", n, "_gflops")] = gflops;
  }
  if (!run_prefill) return;
  measure_peaks(s);
  j["bf16_dot_peak_gflops"] = s.bf16_peak;
  j["fma_peak_gflops"] = s.fma_peak;
  j["bf16_dot_peak_gflops_samples"] = s.bf16_peaks;  // before, after the prefill runs
  j["fma_peak_gflops_samples"] = s.fma_peaks;
  for (const auto& [n, gflops] : s.prefill_gflops)
    j[str_cat("prefill_", n, "_bf16_peak_pct")] = 100.0 * gflops / s.bf16_peak;
}

// Batch 1 is bracketed by its own bandwidth samples, one before each repetition and one after
// the last: the VM's memory bandwidth switches between regimes every few minutes
// (../shared/docs/baselines.md). The roofline takes the run's highest sample (the lower,
// conservative percentage); each repetition is also paired with the two around it. A batch
// size listed twice is measured twice; the last batch-1 run is the one reported.
void run_decode_tests(State& s, Rng& rng) {
  const BenchModelOptions& a = s.a;
  OrderedJson& j = s.j;
  for (int32_t b : a.context_only ? std::vector<int32_t>{} : a.decode_batch) {
    progress("bench-model: tg%d batch %d\n", a.decode_tokens, b);
    double reads = 0, collective_bytes = 0;
    const std::vector<double> tok_s =
        bench_decode(s.m, a, b, rng, b == 1 ? &s.bw_bs1 : nullptr, &reads, &collective_bytes);
    const Stat st = stat_of(tok_s);
    std::erase_if(s.batch_rows, [&](const BatchRow& r) { return r.b == b; });
    s.batch_rows.push_back({b, st.mean, reads, s.bytes.step_bytes(reads), 0,
                            decode_step_flops(s.m.config(), b, a.decode_tokens)});
    if (b == 1) {
      s.bs1_tok_s = st.mean;
      s.pct_bs1 = paired_roofline_pct(tok_s, s.bw_bs1, s.bytes.total);
      s.pct_bs1_median = percentile(s.pct_bs1, 50);
    }
    report_phases(j, tg_phase_key(a.decode_tokens, b));
    s.rows.emplace_back(str_cat("tg", a.decode_tokens, " bs", b), st);
    j[str_cat("decode_bs", b, "_tok_s")] = st.mean;
    j[str_cat("decode_bs", b, "_tok_s_stddev")] = st.stddev;
    if (s.m.shard().sharded())
      j[str_cat("decode_bs", b, "_collective_bytes_per_step")] = collective_bytes;
  }
}

void run_context_tests(State& s, Rng& rng) {
  const std::vector<ContextResult> results = bench_contexts(s.m, s.a, rng);
  for (size_t k = 0; k < results.size(); ++k) {
    s.ctx.push_back({s.a.decode_context[k], {results[k].prefill_s, stat_of(results[k].tpot_ms)}});
  }
}

// The bandwidth after the runs, the run's highest sample and batch 1's roofline at it.
void report_rooflines(State& s) {
  OrderedJson& j = s.j;
  s.bw_after = measure_read_gbps(s.a.bandwidth_mib, s.m.n_threads());
  s.bw = std::max(s.bw_before, s.bw_after);
  for (double x : s.bw_bs1) s.bw = std::max(s.bw, x);
  s.roofline = s.bw * 1e9 / static_cast<double>(s.bytes.total);
  j["read_gbps_before"] = s.bw_before;
  j["read_gbps_after"] = s.bw_after;
  if (s.bs1_tok_s > 0) {
    j["read_gbps_bs1_before"] = s.bw_bs1.front();
    j["read_gbps_bs1_after"] = s.bw_bs1.back();
    j["read_gbps_bs1_samples"] = s.bw_bs1;
  }
  j["read_gbps"] = s.bw;
  j["active_weight_bytes_per_token"] = s.bytes.total;
  for (const auto& [part, b] : s.bytes.parts) j["active_weight_bytes"][part] = b;
  j["roofline_bs1_tok_s"] = s.roofline;
  if (s.bs1_tok_s > 0) {
    j["decode_bs1_roofline_pct"] = 100.0 * s.bs1_tok_s / s.roofline;
    j["decode_bs1_roofline_pct_paired"] = s.pct_bs1_median;
    j["decode_bs1_roofline_pct_paired_reps"] = s.pct_bs1;
  }
}

// One batch against its weight-bytes roofline and its bytes-and-FLOPs bound (report_batches).
void report_batch(State& s, BatchRow& r) {
  OrderedJson& j = s.j;
  r.roofline_tok_s = r.b * s.bw * 1e9 / r.step_bytes;
  const double rl = r.roofline_tok_s;
  j[str_cat("decode_bs", r.b, "_weight_bytes_per_step")] = r.step_bytes;
  if (s.bytes.n_moe_layers > 0) {
    j[str_cat("decode_bs", r.b, "_routed_experts_per_layer")] =
        r.routed_reads_per_step / s.bytes.n_moe_layers;
  }
  if (r.b != 1) {  // batch 1's: roofline_bs1_tok_s and decode_bs1_roofline_pct above
    j[str_cat("roofline_bs", r.b, "_tok_s")] = rl;
    j[str_cat("decode_bs", r.b, "_roofline_pct")] = 100.0 * r.tok_s / rl;
  } else {  // expert parallel: batch 1 reads the held experts it chose, not the average
    DSS_CHECK(s.bytes.experts_partitioned || std::abs(rl - s.roofline) <= 1e-9 * s.roofline,
              "batch 1's step bytes ", r.step_bytes, " != ", s.bytes.total);
  }
  if (s.bs1_tok_s > 0 && r.b != 1) {
    j[str_cat("decode_bs", r.b, "_speedup")] = r.tok_s / s.bs1_tok_s;
    j[str_cat("roofline_bs", r.b, "_speedup")] = rl / s.roofline;
  }
  const double bound_tok_s = r.b / r.bound.seconds;
  j[str_cat("decode_bs", r.b, "_flops_per_step")] = r.flops.total;
  j[str_cat("bound_bs", r.b, "_tok_s")] = bound_tok_s;
  j[str_cat("decode_bs", r.b, "_bound_pct")] = 100.0 * r.tok_s / bound_tok_s;
  for (const BoundPhase& p : r.bound.phases) {
    j[str_cat("decode_bs", r.b, "_bound_phases")][p.name] = {{"bytes", p.bytes},
                                                             {"flops", p.flops},
                                                             {"bytes_ms", p.bytes_s * 1e3},
                                                             {"flops_ms", p.flops_s * 1e3}};
  }
  if (s.bs1_bound_s > 0 && r.b != 1)
    j[str_cat("bound_bs", r.b, "_speedup")] = bound_tok_s * s.bs1_bound_s;
  const std::string test = tg_phase_key(s.a.decode_tokens, r.b);
  if (j.contains("phases_per_forward") && j["phases_per_forward"].contains(test)) {
    OrderedJson pv = phases_vs_bound(j["phases_per_forward"][test], r.bound);
    if (!pv.empty()) j["phases_vs_bound"][test] = std::move(pv);
  }
}

// Every batch against its own weight-bytes roofline: the step reads the batch-1 weights with
// the routed experts its tokens chose (each distinct expert of a layer once), at the run's
// highest bandwidth sample. roofline_bsB_speedup: batch B's roofline over batch 1's, the
// speedup over batch 1 that the weight bytes allow at equal bandwidth efficiency.
// And against its bytes-and-FLOPs bound (decode_step_bound) at the same bandwidth and the peak
// of the matmuls' arithmetic (bf16 dot or f32 FMA; the higher sample): bound_bsB_speedup is
// the bounds' ratio, the speedup over batch 1 at equal shares of the two bounds (batch B can
// exceed it only where batch 1 runs further below its own bound).
void report_batches(State& s) {
  s.bf16_arith = s.m.matmul_bf16();
  s.peak = s.bf16_arith ? s.bf16_peak : s.fma_peak;
  for (BatchRow& r : s.batch_rows) {
    r.bound = decode_step_bound(s.bytes.step_parts(r.routed_reads_per_step), r.flops, s.bw, s.peak);
    if (r.b == 1) s.bs1_bound_s = r.bound.seconds;
  }
  if (!s.batch_rows.empty()) {
    s.j["bound_peak"] = s.bf16_arith ? "bf16_dot" : "fma";
    s.j["bound_peak_gflops"] = s.peak;
  }
  for (BatchRow& r : s.batch_rows) report_batch(s, r);
}

// MTP speculative decoding: each step kind against a plain decode step, and the speedup the
// step times imply at acceptance rates 0.6 / 0.8 / 0.9 (tokens per cycle x plain step / cycle).
void report_spec(State& s) {
  const int32_t k = s.a.spec_steps;
  for (const SpecStepTimes& t : s.spec) {
    OrderedJson& j = s.j["speculative"][str_cat("bs", t.batch)];
    j["num_steps"] = k;
    j["context"] = s.a.spec_context;
    j["plain_step_ms"] = t.plain_ms;
    j["verify_step_ms"] = t.verify_ms;
    j["verify_vs_plain"] = t.verify_ms / t.plain_ms;
    // The weight bytes each step reads (the routed experts its tokens chose): the bound of
    // verify_vs_plain on a bandwidth-bound step.
    j["plain_step_weight_bytes"] = s.bytes.step_bytes(t.plain_routed_reads);
    j["verify_step_weight_bytes"] = s.bytes.step_bytes(t.verify_routed_reads);
    j["verify_vs_plain_weight_bytes"] =
        s.bytes.step_bytes(t.verify_routed_reads) / s.bytes.step_bytes(t.plain_routed_reads);
    j["mtp_catchup_ms"] = t.catchup_ms;
    j["mtp_draft_step_ms"] = t.draft_ms;
    j["mtp_draft_vs_plain"] = t.draft_ms / t.plain_ms;
    j["cycle_ms"] = t.cycle_ms(k);
    for (double alpha : {0.6, 0.8, 0.9}) {
      j[str_cat("implied_speedup_at_", static_cast<int>(alpha * 100))] =
          expected_tokens_per_cycle(alpha, k) * t.plain_ms / t.cycle_ms(k);
    }
  }
}

void report_contexts(State& s) {
  for (const auto& [cl, r] : s.ctx) {
    s.j[str_cat("decode_ctx_", cl, "_prefill_s")] = r.first;
    s.j[str_cat("decode_ctx_", cl, "_tpot_ms")] = r.second.mean;
    s.j[str_cat("decode_ctx_", cl, "_tpot_ms_stddev")] = r.second.stddev;
    s.j[str_cat("decode_ctx_", cl, "_tpot_ratio")] =
        r.second.mean / s.ctx.front().second.second.mean;
  }
}

}  // namespace

void run_bench_model(const Model& m, const BenchModelOptions& a) {
  set_phase_timers(a.phase_times || a.ab_variants > 1);
  set_phase_variants(a.ab_variants);
  State s{m, a, cpu::describe_cpu(),
          active_bytes_per_token(m.weights(), m.config().n_experts_per_tok), kv_dtype_of(m, a)};
  Rng rng(a.seed);
  describe_run(s);
  progress("bench-model: measuring read bandwidth (%d threads, %lld MiB)\n", m.n_threads(),
           static_cast<long long>(a.bandwidth_mib));
  s.bw_before = measure_read_gbps(a.bandwidth_mib, m.n_threads());
  run_prefill_tests(s, rng);
  run_decode_tests(s, rng);
  run_context_tests(s, rng);
  if (a.speculative) s.spec = bench_spec_steps(m, a, rng);
  report_rooflines(s);
  report_batches(s);
  report_contexts(s);
  report_spec(s);
  if (a.json) {
    std::cout << s.j.dump(2) << "\n";
    return;
  }
  print_bench_model_tables(s);
}

}  // namespace dss::perf
