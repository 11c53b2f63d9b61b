// `dsserve bench-model`: the model's own speed, in-process (no scheduler, no HTTP), in the shapes
// of llama-bench so the numbers compare: pp<N> = one sequence, N random token ids, ONE forward of
// N tokens on an empty cache; tg<T> at batch B = B sequences decoding T tokens together from an
// empty cache, one forward per step, each step feeding fixed random ids (not the argmax; the
// logits are computed and ignored). Each test: one unmeasured warm-up, then `--repetitions`
// runs; mean and sample standard deviation of tok/s, as llama-bench reports them.
// The decode roofline is measured read bandwidth / weight bytes one token reads at batch 1
// (active_bytes.h); the bandwidth is measured right before and right after the runs, and before
// each batch-1 repetition and after the last (each repetition is also paired with its two).
// Every batch size also against its own roofline: the batch-1 weight bytes with the routed
// experts its steps actually read (each distinct expert of a layer once per step;
// Workspace::routed_expert_reads), so batch B's speedup over batch 1 can be set against what the
// weight bytes allow; and against its bytes-and-FLOPs bound (decode_flops.h: per phase the slower
// of its weight bytes at the read bandwidth and its FLOPs at the peak of the arithmetic the
// matmuls run): how much of a batch's distance from its roofline the machine's arithmetic
// accounts for, and how much the code loses.
// Long-context decode (`--decode-context`): one sequence per context C filled with C tokens by
// chunked prefill (its time printed), then `--context-steps` timed decode steps at context C,
// the repetitions of all contexts interleaved (bench_contexts).
// `--context-fill synthetic` writes random cache rows instead (BatchDriver::fill_synthetic): for
// iterating on long-context kernels only; the JSON records which fill produced the figures.
// `--phase-times` (base/phase_timer.h) also splits each pp / tg test's measured forward calls
// into phases: "phases_per_forward" in the JSON and a table on stderr. `--ab-variants N` has the
// forward calls alternate N variants (base/phase_timer.h) and adds each one's phases
// ("phases_per_variant"): for comparing two versions of a kernel within one run.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <vector>

#include "apps/dsserve/active_bytes.h"
#include "apps/dsserve/batch_driver.h"
#include "apps/dsserve/commands.h"
#include "apps/dsserve/decode_flops.h"
#include "apps/dsserve/engine_flags.h"
#include "apps/dsserve/prefill_flops.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/phase_timer.h"
#include "base/rng.h"
#include "base/str_cat.h"
#include "bench/compute_peak.h"
#include "bench/metrics.h"
#include "bench/read_bandwidth.h"
#include "io/json.h"
#include "kernels/cpu/cpu_features.h"
#include "kv/kv_cache.h"

namespace dss::app {

namespace {

struct BenchModelArgs {
  std::string model;
  int32_t n_threads = 0;
  std::vector<int32_t> prefill = {512, 2048};
  std::vector<int32_t> decode_batch = {1, 4, 16};
  int32_t decode_tokens = 128;
  std::vector<int32_t> decode_context;
  int32_t context_steps = 32;
  int32_t context_chunk = 2048;
  int32_t repetitions = 3;
  int32_t page_size = 64;
  std::string kv_cache_dtype = "auto";  // auto: fp8 for V3.2, bf16 for V3 (as serve)
  std::string weight_dtype;
  std::string weight_layout = "tiled";
  std::string lm_head_dtype;
  std::string matmul_dtype;
  int64_t bandwidth_mib = 1024;
  uint64_t seed = 1234;
  bool json = false;
  bool phase_times = false;
  int32_t ab_variants = 1;    // --ab-variants: forward calls alternate variants (phase_timer.h)
  bool context_only = false;  // --context-only: skip the pp and tg tests
  std::string context_fill = "prefill";  // prefill | synthetic (diagnostic, BatchDriver)
};

struct Stat {
  double mean = 0, stddev = 0;
};

// Mean and sample standard deviation (n - 1; 0 for one value), as llama-bench.
Stat stat_of(const std::vector<double>& v) {
  Stat s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(v.size() - 1));
  }
  return s;
}

std::vector<TokenId> random_ids(Rng& rng, size_t n, int32_t n_vocab) {
  std::vector<TokenId> ids(n);
  for (TokenId& t : ids) t = static_cast<TokenId>(rng.next_u64() % static_cast<uint64_t>(n_vocab));
  return ids;
}

void progress(const char* fmt, auto... args) {
  std::fprintf(stderr, fmt, args...);
  std::fflush(stderr);
}

// The cache dtype: --kv-cache-dtype, "auto" resolving as the engine does.
DType kv_dtype(const Model& m, const BenchModelArgs& a) {
  DType t = m.default_kv_dtype();
  if (a.kv_cache_dtype != "auto") DSS_CHECK(kv_dtype_from_name(a.kv_cache_dtype.c_str(), t));
  return t;
}

// Before repetition rep's timed forward calls (rep -1: the warm-up): the phase totals start at
// the first measured one, and each measured repetition starts at another variant, so that its
// first call (after a bandwidth sample's cold caches) does not always fall on the same one, as it
// would with an even number of calls per repetition.
void start_repetition_phases(int32_t rep) {
  if (rep == 0) phase_reset();
  if (rep >= 0) restart_phase_variants(rep);
}

// pp<n>: tok/s of one forward of n tokens on an empty cache, per repetition.
std::vector<double> bench_prefill(const Model& m, const BenchModelArgs& a, int32_t n, Rng& rng) {
  BatchDriver d(m, 1, n, n, a.page_size, kv_dtype(m, a));
  const std::vector<TokenId> ids = random_ids(rng, static_cast<size_t>(n), m.config().n_vocab);
  std::vector<double> tok_s;
  for (int32_t rep = -1; rep < a.repetitions; ++rep) {  // rep -1: warm-up
    d.truncate(0);
    start_repetition_phases(rep);
    const double t0 = now_seconds();
    d.step(ids, n);
    const double s = now_seconds() - t0;
    if (rep >= 0) tok_s.push_back(n / s);
  }
  return tok_s;
}

// tg<T> at batch b: tok/s = b * T / time of T batched decode steps, per repetition. With
// bw_gbps, it is replaced by read-bandwidth samples taken right before every measured repetition
// and once after the last (repetitions + 1 samples: repetition i between samples i and i + 1;
// each sample streams a --bandwidth-mib buffer, so a repetition starts with cold caches).
// *routed_reads_per_step (not null): the routed experts a measured step read, summed over the MoE
// layers (Workspace::routed_expert_reads), mean over the measured steps.
std::vector<double> bench_decode(const Model& m, const BenchModelArgs& a, int32_t b, Rng& rng,
                                 std::vector<double>* bw_gbps, double* routed_reads_per_step) {
  const int32_t T = a.decode_tokens;
  BatchDriver d(m, b, T, 1, a.page_size, kv_dtype(m, a));
  const std::vector<TokenId> ids =
      random_ids(rng, static_cast<size_t>(b) * T, m.config().n_vocab);  // [T, b]
  std::vector<double> tok_s;
  int64_t reads = 0, steps = 0;
  if (bw_gbps != nullptr) bw_gbps->clear();
  for (int32_t rep = -1; rep < a.repetitions; ++rep) {
    d.truncate(0);
    const int32_t n_steps = rep < 0 ? std::min(T, 4) : T;  // warm-up: a few steps
    if (rep >= 0 && bw_gbps != nullptr)
      bw_gbps->push_back(bench::measure_read_gbps(a.bandwidth_mib, m.n_threads()));
    const int64_t reads0 = d.routed_expert_reads();
    start_repetition_phases(rep);
    const double t0 = now_seconds();
    for (int32_t i = 0; i < n_steps; ++i)
      d.step(std::span<const TokenId>(ids).subspan(static_cast<size_t>(i) * b, b), 1);
    const double s = now_seconds() - t0;
    if (rep >= 0) {
      tok_s.push_back(static_cast<double>(b) * T / s);
      reads += d.routed_expert_reads() - reads0;
      steps += n_steps;
    }
  }
  *routed_reads_per_step = steps > 0 ? static_cast<double>(reads) / static_cast<double>(steps) : 0;
  if (bw_gbps != nullptr)
    bw_gbps->push_back(bench::measure_read_gbps(a.bandwidth_mib, m.n_threads()));
  return tok_s;
}

// --phase-times (base/phase_timer.h): the phases of the forward calls since phase_reset()
// (bench_prefill / bench_decode reset at their first measured repetition), per forward call: ms
// and calls, into j["phases_per_forward"][test] and a table on stderr. Nothing without the flag.
// With --ab-variants n > 1 also each variant's, into j["phases_per_variant"][test][v] (plus
// "forwards": its forward calls) and a table per variant.
OrderedJson phases_of(const PhaseTotals& t, const std::string& title) {
  const auto n = static_cast<double>(t.calls[static_cast<size_t>(Phase::kForward)]);
  OrderedJson o;
  if (n == 0) return o;
  progress("bench-model: %s (ms, calls)\n", title.c_str());
  for (int32_t i = 0; i < kNumPhases; ++i) {
    const auto k = static_cast<size_t>(i);
    if (t.calls[k] == 0) continue;
    const double ms = t.seconds[k] * 1e3 / n, calls = static_cast<double>(t.calls[k]) / n;
    progress("  %-16s %10.3f %7.1f\n", phase_name(static_cast<Phase>(i)), ms, calls);
    o[phase_name(static_cast<Phase>(i))] = {{"ms", ms}, {"calls", calls}};
  }
  return o;
}
void report_phases(OrderedJson& j, const std::string& test) {
  if (!phase_timers_on()) return;
  OrderedJson o = phases_of(phase_totals(), test + " phases per forward");
  if (o.empty()) return;
  j["phases_per_forward"][test] = o;
  if (phase_variants() == 1) return;
  OrderedJson per = OrderedJson::array();
  for (int32_t v = 0; v < phase_variants(); ++v) {
    const PhaseTotals t = phase_totals(v);
    OrderedJson ov = phases_of(t, str_cat(test, " variant ", v, " phases per forward"));
    ov["forwards"] = t.calls[static_cast<size_t>(Phase::kForward)];
    per.push_back(ov);
  }
  j["phases_per_variant"][test] = per;
}

// Batch 1 against the roofline per repetition: its tok/s times the bytes per token over the
// higher of the bandwidth samples right before and after it (the lower, conservative
// percentage). The VM's bandwidth switches regime within a run (minutes, sometimes seconds), so
// one pair of samples around all repetitions can pair a slow spell's decode with a fast spell's
// bandwidth or the reverse; paired per repetition, the median is the figure.
std::vector<double> paired_roofline_pct(const std::vector<double>& tok_s,
                                        const std::vector<double>& bw_gbps, int64_t bytes) {
  DSS_CHECK(bw_gbps.size() == tok_s.size() + 1);
  std::vector<double> pct;
  for (size_t i = 0; i < tok_s.size(); ++i) {
    const double bw = std::max(bw_gbps[i], bw_gbps[i + 1]);
    pct.push_back(100.0 * tok_s[i] * static_cast<double>(bytes) / (bw * 1e9));
  }
  return pct;
}

struct ContextResult {
  double prefill_s = 0;
  std::vector<double> tpot_ms;  // per repetition: mean time per decode step
};

// Long-context decode: per context c one sequence filled with c tokens (chunked prefill, timed
// once and reported; or --context-fill synthetic), then per repetition context_steps decode steps
// from context c (the cache is cut back to c between repetitions). All contexts are filled first
// and the repetitions are interleaved (rep 1 of every context, then rep 2, ...), so a slow spell
// of a shared machine lands on every context alike and their TPOT ratio stays meaningful.
std::vector<ContextResult> bench_contexts(const Model& m, const BenchModelArgs& a, Rng& rng) {
  const int32_t steps = a.context_steps;
  struct Run {
    int32_t c;
    std::unique_ptr<BatchDriver> d;
    std::vector<TokenId> ids;
  };
  std::vector<Run> runs;
  std::vector<ContextResult> results(a.decode_context.size());
  for (size_t k = 0; k < a.decode_context.size(); ++k) {
    const int32_t c = a.decode_context[k];
    progress("bench-model: filling context %d (%s)\n", c, a.context_fill.c_str());
    Run r{c,
          std::make_unique<BatchDriver>(m, 1, c + steps, std::min(a.context_chunk, c), a.page_size,
                                        kv_dtype(m, a)),
          random_ids(rng, static_cast<size_t>(c) + steps, m.config().n_vocab)};
    const double t0 = now_seconds();
    if (a.context_fill == "synthetic") {
      r.d->fill_synthetic(c, a.seed);
    } else {
      for (int32_t i = 0; i < c; i += a.context_chunk) {
        const int32_t n = std::min(a.context_chunk, c - i);
        r.d->step(std::span<const TokenId>(r.ids).subspan(static_cast<size_t>(i), n), n);
      }
    }
    results[k].prefill_s = now_seconds() - t0;
    runs.push_back(std::move(r));
  }
  for (int32_t rep = -1; rep < a.repetitions; ++rep) {  // rep -1: one warm-up step each
    for (size_t k = 0; k < runs.size(); ++k) {
      Run& r = runs[k];
      r.d->truncate(r.c);
      const int32_t n_steps = rep < 0 ? 1 : steps;
      const double t1 = now_seconds();
      for (int32_t i = 0; i < n_steps; ++i)
        r.d->step(std::span<const TokenId>(r.ids).subspan(static_cast<size_t>(r.c + i), 1), 1);
      if (rep >= 0) results[k].tpot_ms.push_back((now_seconds() - t1) * 1e3 / steps);
    }
  }
  return results;
}

Status validate(const BenchModelArgs& a) {
  auto positive = [](const std::vector<int32_t>& v, const char* flag) -> Status {
    for (int32_t x : v)
      if (x < 1) return Status::error(flag, ": ", x, " is not a positive length");
    return Status::ok();
  };
  DSS_RETURN_IF_ERROR(positive(a.prefill, "--prefill"));
  // The prefill runs measure the peaks that the decode batches' bounds need.
  if (a.prefill.empty()) return Status::error("--prefill: at least one length");
  DSS_RETURN_IF_ERROR(positive(a.decode_batch, "--decode-batch"));
  DSS_RETURN_IF_ERROR(positive(a.decode_context, "--decode-context"));
  if (a.decode_tokens < 1) return Status::error("--decode-tokens must be >= 1");
  if (a.context_steps < 1) return Status::error("--context-steps must be >= 1");
  if (a.context_chunk < 1) return Status::error("--context-chunk must be >= 1");
  if (a.repetitions < 1) return Status::error("--repetitions must be >= 1");
  if (a.bandwidth_mib < 1) return Status::error("--bandwidth-mib must be >= 1");
  if (a.ab_variants < 1 || a.ab_variants > kMaxPhaseVariants)
    return Status::error("--ab-variants must be 1..", kMaxPhaseVariants);
  return Status::ok();
}

// A tg test's key in phases_per_forward and phases_vs_bound: tg<T>_bs<B>.
std::string tg_phase_key(const BenchModelArgs& a, int32_t b) {
  return str_cat("tg", a.decode_tokens, "_bs", b);
}

// --phase-times: a tg test's measured phases per forward (phases_per_forward) beside the bound of
// the same step's phases (decode_step_bound): mla holds the attention and the V3.2 indexer,
// moe.route the router, moe.experts the experts, the forward the whole step (whose bound also
// has the embedding row and norms). {phase: {ms, bound_ms}}; empty without phase times.
OrderedJson phases_vs_bound(const OrderedJson& measured, const StepBound& bound) {
  // (measured phase, the bound's phases it holds; "": none)
  static constexpr std::pair<const char*, std::array<const char*, 2>> kMap[] = {
      {"mla", {"attention", "indexer"}},
      {"moe.route", {"router", ""}},
      {"moe.experts", {"experts", ""}},
      {"dense_ffn", {"dense_ffn", ""}},
      {"lm_head", {"lm_head", ""}}};
  OrderedJson o;
  for (const auto& [name, parts] : kMap) {
    if (!measured.contains(name)) continue;
    double s = 0;
    for (const BoundPhase& p : bound.phases) {
      if (p.name == parts[0] || p.name == parts[1]) s += std::max(p.bytes_s, p.flops_s);
    }
    o[name] = {{"ms", measured[name]["ms"].get<double>()}, {"bound_ms", s * 1e3}};
  }
  if (!o.empty() && measured.contains("forward")) {
    o["forward"] = {{"ms", measured["forward"]["ms"].get<double>()},
                    {"bound_ms", bound.seconds * 1e3}};
  }
  return o;
}

std::string mb(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(bytes) * 1e-6);
  return buf;
}

int run_bench_model(const BenchModelArgs& a) {
  if (Status s = validate(a); !s) {
    std::fprintf(stderr, "dsserve bench-model: %s\n", s.message().c_str());
    return 2;
  }
  auto loaded = Model::load(LoadOptions{a.model, a.n_threads, a.weight_dtype, "none",
                                        a.weight_layout, a.lm_head_dtype, a.matmul_dtype});
  if (!loaded) {
    std::fprintf(stderr, "dsserve bench-model: %s\n", loaded.message().c_str());
    return 1;
  }
  const Model& m = **loaded;
  const ModelConfig& c = m.config();
  const int32_t n_threads = m.n_threads();
  set_phase_timers(a.phase_times || a.ab_variants > 1);
  set_phase_variants(a.ab_variants);
  const ActiveBytes bytes = active_bytes_per_token(m.weights(), c.n_experts_per_tok);
  Rng rng(a.seed);
  OrderedJson j;
  j["model"] = a.model;
  j["arch"] = model_arch_name(c.arch);
  const cpu::CpuDescription& cpu = cpu::describe_cpu();
  j["cpu"] = {{"vendor", cpu.vendor},    {"brand", cpu.brand},       {"family", cpu.family},
              {"model", cpu.model},      {"stepping", cpu.stepping}, {"target", cpu.target},
              {"bf16_dot", cpu.bf16_dot}};
  j["threads"] = n_threads;
  j["repetitions"] = a.repetitions;
  j["weight_dtype"] = a.weight_dtype.empty() ? "stored" : a.weight_dtype;
  j["weight_layout"] = a.weight_layout;
  j["lm_head_dtype"] = a.lm_head_dtype.empty() ? "stored" : a.lm_head_dtype;
  j["matmul_dtype"] = m.matmul_bf16() ? "bf16" : "f32";
  j["kv_cache_dtype"] = kv_dtype_name(kv_dtype(m, a));
  j["decode_tokens"] = a.decode_tokens;
  j["decode_token_ids"] = "fixed random";
  if (!a.decode_context.empty()) j["context_fill"] = a.context_fill;
  if (a.ab_variants > 1) j["ab_variants"] = a.ab_variants;  // the tok/s mix the variants
  progress("bench-model: measuring read bandwidth (%d threads, %lld MiB)\n", n_threads,
           static_cast<long long>(a.bandwidth_mib));
  const double bw_before = bench::measure_read_gbps(a.bandwidth_mib, n_threads);
  // Prefill is compute-bound: its FLOP rate against the bf16-dot peak (issue #7's denominator;
  // what --matmul-dtype bf16 runs on) and the f32 FMA peak, both measured here and now, before
  // and after the prefill runs; the higher of each pair is the peak (the lower, conservative
  // percentage: a slow spell of the VM during one measurement would inflate it).
  double bf16_peak = 0, fma_peak = 0;
  std::vector<double> bf16_peaks, fma_peaks;
  auto measure_peaks = [&] {
    progress("bench-model: measuring the bf16-dot and FMA peaks (%d threads)\n", n_threads);
    bf16_peaks.push_back(bench::measure_bf16_dot_gflops(n_threads));
    fma_peaks.push_back(bench::measure_fma_gflops(n_threads));
    bf16_peak = std::max(bf16_peak, bf16_peaks.back());
    fma_peak = std::max(fma_peak, fma_peaks.back());
  };
  const bool run_prefill = !a.context_only && !a.prefill.empty();
  // --prefill is never empty (validate), so the peaks are there for the decode batches' bounds
  // (unless --context-only, which runs no batches).
  if (run_prefill) measure_peaks();
  std::vector<std::pair<std::string, Stat>> rows;          // (test name, tok/s)
  std::vector<std::pair<int32_t, double>> prefill_gflops;  // (n, GFLOP/s at the mean tok/s)
  for (int32_t n : a.context_only ? std::vector<int32_t>{} : a.prefill) {
    progress("bench-model: pp%d\n", n);
    const Stat s = stat_of(bench_prefill(m, a, n, rng));
    report_phases(j, str_cat("pp", n));
    rows.emplace_back(str_cat("pp", n), s);
    j[str_cat("prefill_", n, "_tok_s")] = s.mean;
    j[str_cat("prefill_", n, "_tok_s_stddev")] = s.stddev;
    const double gflops = prefill_flops(c, n) / n * s.mean * 1e-9;
    prefill_gflops.emplace_back(n, gflops);
    j[str_cat("prefill_", n, "_gflops")] = gflops;
  }
  if (run_prefill) {
    measure_peaks();
    j["bf16_dot_peak_gflops"] = bf16_peak;
    j["fma_peak_gflops"] = fma_peak;
    j["bf16_dot_peak_gflops_samples"] = bf16_peaks;  // before, after the prefill runs
    j["fma_peak_gflops_samples"] = fma_peaks;
    for (const auto& [n, gflops] : prefill_gflops)
      j[str_cat("prefill_", n, "_bf16_peak_pct")] = 100.0 * gflops / bf16_peak;
  }
  double bs1_tok_s = 0;
  // Batch 1 is bracketed by its own bandwidth samples, one before each repetition and one after
  // the last: the VM's memory bandwidth switches between regimes every few minutes
  // (../shared/docs/baselines.md). The roofline takes the run's highest sample (the lower,
  // conservative percentage); each repetition is also paired with the two around it. A batch
  // size listed twice is measured twice; the last batch-1 run is the one reported.
  std::vector<double> bw_bs1, pct_bs1;  // samples around each repetition; its paired percentage
  double pct_bs1_median = 0;            // bench::percentile(.., 50): numpy's median
  struct BatchRow {
    int32_t b;
    double tok_s, routed_reads_per_step, step_bytes;  // means over the timed steps
    double roofline_tok_s = 0;  // b x the run's highest bandwidth sample / step_bytes (set below)
    StepFlops flops;            // per step (decode_step_flops)
    StepBound bound;            // at the run's highest bandwidth sample and the peak (set below)
  };
  std::vector<BatchRow> batch_rows;  // one per batch size, the last run of a repeated one
  for (int32_t b : a.context_only ? std::vector<int32_t>{} : a.decode_batch) {
    progress("bench-model: tg%d batch %d\n", a.decode_tokens, b);
    double reads = 0;
    const std::vector<double> tok_s =
        bench_decode(m, a, b, rng, b == 1 ? &bw_bs1 : nullptr, &reads);
    const Stat s = stat_of(tok_s);
    std::erase_if(batch_rows, [&](const BatchRow& r) { return r.b == b; });
    batch_rows.push_back(
        {b, s.mean, reads, bytes.step_bytes(reads), 0, decode_step_flops(c, b, a.decode_tokens)});
    if (b == 1) {
      bs1_tok_s = s.mean;
      pct_bs1 = paired_roofline_pct(tok_s, bw_bs1, bytes.total);
      pct_bs1_median = bench::percentile(pct_bs1, 50);
    }
    report_phases(j, tg_phase_key(a, b));
    rows.emplace_back(str_cat("tg", a.decode_tokens, " bs", b), s);
    j[str_cat("decode_bs", b, "_tok_s")] = s.mean;
    j[str_cat("decode_bs", b, "_tok_s_stddev")] = s.stddev;
  }
  std::vector<std::pair<int32_t, std::pair<double, Stat>>> ctx;  // (C, (prefill s, TPOT ms))
  const std::vector<ContextResult> ctx_results = bench_contexts(m, a, rng);
  for (size_t k = 0; k < ctx_results.size(); ++k) {
    ctx.push_back(
        {a.decode_context[k], {ctx_results[k].prefill_s, stat_of(ctx_results[k].tpot_ms)}});
  }
  const double bw_after = bench::measure_read_gbps(a.bandwidth_mib, n_threads);
  double bw = std::max(bw_before, bw_after);
  for (double x : bw_bs1) bw = std::max(bw, x);
  const double roofline = bw * 1e9 / static_cast<double>(bytes.total);
  j["read_gbps_before"] = bw_before;
  j["read_gbps_after"] = bw_after;
  if (bs1_tok_s > 0) {
    j["read_gbps_bs1_before"] = bw_bs1.front();
    j["read_gbps_bs1_after"] = bw_bs1.back();
    j["read_gbps_bs1_samples"] = bw_bs1;
  }
  j["read_gbps"] = bw;
  j["active_weight_bytes_per_token"] = bytes.total;
  for (const auto& [part, b] : bytes.parts) j["active_weight_bytes"][part] = b;
  j["roofline_bs1_tok_s"] = roofline;
  if (bs1_tok_s > 0) {
    j["decode_bs1_roofline_pct"] = 100.0 * bs1_tok_s / roofline;
    j["decode_bs1_roofline_pct_paired"] = pct_bs1_median;
    j["decode_bs1_roofline_pct_paired_reps"] = pct_bs1;
  }
  // Every batch against its own weight-bytes roofline: the step reads the batch-1 weights with
  // the routed experts its tokens chose (each distinct expert of a layer once), at the run's
  // highest bandwidth sample. roofline_bsB_speedup: batch B's roofline over batch 1's, the
  // speedup over batch 1 that the weight bytes allow at equal bandwidth efficiency.
  // And against its bytes-and-FLOPs bound (decode_step_bound) at the same bandwidth and the peak
  // of the matmuls' arithmetic (bf16 dot or f32 FMA; the higher sample): bound_bsB_speedup is
  // the bounds' ratio, the speedup over batch 1 at equal shares of the two bounds (batch B can
  // exceed it only where batch 1 runs further below its own bound).
  const bool bf16_arith = m.matmul_bf16();
  const double peak = bf16_arith ? bf16_peak : fma_peak;
  double bs1_bound_s = 0;  // batch 1's bound (s per step); 0: batch 1 not in the run
  for (BatchRow& r : batch_rows) {
    r.bound = decode_step_bound(bytes.step_parts(r.routed_reads_per_step), r.flops, bw, peak);
    if (r.b == 1) bs1_bound_s = r.bound.seconds;
  }
  if (!batch_rows.empty()) {
    j["bound_peak"] = bf16_arith ? "bf16_dot" : "fma";
    j["bound_peak_gflops"] = peak;
  }
  for (BatchRow& r : batch_rows) {
    r.roofline_tok_s = r.b * bw * 1e9 / r.step_bytes;
    const double rl = r.roofline_tok_s;
    j[str_cat("decode_bs", r.b, "_weight_bytes_per_step")] = r.step_bytes;
    if (bytes.n_moe_layers > 0) {
      j[str_cat("decode_bs", r.b, "_routed_experts_per_layer")] =
          r.routed_reads_per_step / bytes.n_moe_layers;
    }
    if (r.b != 1) {  // batch 1's: roofline_bs1_tok_s and decode_bs1_roofline_pct above
      j[str_cat("roofline_bs", r.b, "_tok_s")] = rl;
      j[str_cat("decode_bs", r.b, "_roofline_pct")] = 100.0 * r.tok_s / rl;
    } else {
      DSS_CHECK(std::abs(rl - roofline) <= 1e-9 * roofline, "batch 1's step bytes ", r.step_bytes,
                " != ", bytes.total);
    }
    if (bs1_tok_s > 0 && r.b != 1) {
      j[str_cat("decode_bs", r.b, "_speedup")] = r.tok_s / bs1_tok_s;
      j[str_cat("roofline_bs", r.b, "_speedup")] = rl / roofline;
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
    if (bs1_bound_s > 0 && r.b != 1)
      j[str_cat("bound_bs", r.b, "_speedup")] = bound_tok_s * bs1_bound_s;
    const std::string test = tg_phase_key(a, r.b);
    if (j.contains("phases_per_forward") && j["phases_per_forward"].contains(test)) {
      OrderedJson pv = phases_vs_bound(j["phases_per_forward"][test], r.bound);
      if (!pv.empty()) j["phases_vs_bound"][test] = std::move(pv);
    }
  }
  for (const auto& [cl, r] : ctx) {
    j[str_cat("decode_ctx_", cl, "_prefill_s")] = r.first;
    j[str_cat("decode_ctx_", cl, "_tpot_ms")] = r.second.mean;
    j[str_cat("decode_ctx_", cl, "_tpot_ms_stddev")] = r.second.stddev;
    j[str_cat("decode_ctx_", cl, "_tpot_ratio")] = r.second.mean / ctx.front().second.second.mean;
  }
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf(
      "model %s (%s), %d threads, weights %s (%s layout), matmul %s, KV cache %s, %d "
      "repetitions + warm-up\n",
      a.model.c_str(), model_arch_name(c.arch).c_str(), n_threads,
      a.weight_dtype.empty() ? "as stored" : a.weight_dtype.c_str(), a.weight_layout.c_str(),
      m.matmul_bf16() ? "bf16" : "f32", kv_dtype_name(kv_dtype(m, a)), a.repetitions);
  std::printf("cpu %s (%s family %d model %d stepping %d), Highway target %s, bf16 dot %s\n",
              cpu.brand.empty() ? "(no brand string)" : cpu.brand.c_str(), cpu.vendor.c_str(),
              cpu.family, cpu.model, cpu.stepping, cpu.target.c_str(), cpu.bf16_dot ? "yes" : "no");
  std::printf("read bandwidth: %.1f GB/s before, %.1f GB/s after the runs", bw_before, bw_after);
  if (bs1_tok_s > 0) {
    std::printf(" (%.1f / %.1f right before / after batch 1)", bw_bs1.front(), bw_bs1.back());
  }
  std::printf("; the roofline uses the highest\n\n");
  std::printf("| %-14s | %15s |\n|%s|%s:|\n", "test", "tok/s", std::string(16, '-').c_str(),
              std::string(16, '-').c_str());
  for (const auto& [name, s] : rows)
    std::printf("| %-14s | %7.2f ± %5.2f |\n", name.c_str(), s.mean, s.stddev);
  std::printf(
      "\nweight bytes read per decoded token at batch 1 (stored dtypes, scales included):\n");
  for (const auto& [part, b] : bytes.parts)
    std::printf("  %-16s %14s MB\n", part.c_str(), mb(b).c_str());
  std::printf("  %-16s %14s MB\n", "total", mb(bytes.total).c_str());
  std::printf("roofline at batch 1: %.1f GB/s / %s MB = %.1f tok/s", bw, mb(bytes.total).c_str(),
              roofline);
  if (bs1_tok_s > 0) std::printf("; decode bs1 reaches %.1f%% of it", 100.0 * bs1_tok_s / roofline);
  std::printf("\n");
  if (bs1_tok_s > 0) {
    std::printf("decode bs1 per repetition against the higher bandwidth sample around it:");
    for (size_t i = 0; i < pct_bs1.size(); ++i)
      std::printf(" %.1f%% (%.1f / %.1f GB/s)", pct_bs1[i], bw_bs1[i], bw_bs1[i + 1]);
    std::printf("; median %.1f%%\n", pct_bs1_median);
  }
  if (!batch_rows.empty()) {
    std::printf(
        "\ndecode against each batch's weight bytes per step (the routed experts its tokens chose, "
        "each once per layer) at %.1f GB/s:\n",
        bw);
    std::printf(
        "| batch | experts/layer | MB/step | roofline tok/s | tok/s | %% of it | x bs1 | roofline "
        "x bs1 |\n|------:|--------------:|--------:|---------------:|------:|--------:|------:|"
        "--------------:|\n");
    for (const BatchRow& r : batch_rows) {
      const double rl = r.roofline_tok_s;
      if (bytes.n_moe_layers > 0) {
        std::printf("| %5d | %13.2f |", r.b, r.routed_reads_per_step / bytes.n_moe_layers);
      } else {
        std::printf("| %5d | %13s |", r.b, "-");
      }
      std::printf(" %7.1f | %14.1f | %5.1f | %6.1f%% |", r.step_bytes / 1e6, rl, r.tok_s,
                  100.0 * r.tok_s / rl);
      if (bs1_tok_s > 0) {
        std::printf(" %5.2f | %13.2f |\n", r.tok_s / bs1_tok_s, rl / roofline);
      } else {
        std::printf("     - |             - |\n");
      }
    }
    std::printf(
        "\ndecode against each batch's bytes-and-FLOPs bound (per phase the slower of its weight "
        "bytes at %.1f GB/s and its FLOPs at the %s peak, %.1f GFLOP/s; phases named where the "
        "FLOPs are the slower):\n",
        bw, bf16_arith ? "bf16-dot" : "f32 FMA", peak);
    std::printf(
        "| batch | GFLOP/step | bound ms | bound tok/s | tok/s | %% of it | bound x bs1 | "
        "FLOP-bound phases |\n|------:|-----------:|---------:|------------:|------:|--------:|"
        "------------:|:------------------|\n");
    for (const BatchRow& r : batch_rows) {
      const double bound_tok_s = r.b / r.bound.seconds;
      std::string flop_bound;
      for (const BoundPhase& p : r.bound.phases) {
        if (p.flops_s > p.bytes_s) flop_bound += (flop_bound.empty() ? "" : ", ") + p.name;
      }
      std::printf("| %5d | %10.3f | %8.2f | %11.1f | %5.1f | %6.1f%% |", r.b, r.flops.total * 1e-9,
                  r.bound.seconds * 1e3, bound_tok_s, r.tok_s, 100.0 * r.tok_s / bound_tok_s);
      if (bs1_bound_s > 0) {
        std::printf(" %11.2f |", bound_tok_s * bs1_bound_s);
      } else {
        std::printf(" %11s |", "-");
      }
      std::printf(" %s |\n", flop_bound.empty() ? "-" : flop_bound.c_str());
    }
    if (j.contains("phases_vs_bound")) {
      std::printf(
          "\nphases per step against their bound (--phase-times; mla holds the attention and "
          "the V3.2 indexer):\n| batch | phase       |       ms | bound ms | bound / ms |\n"
          "|------:|:------------|---------:|---------:|-----------:|\n");
      for (const BatchRow& r : batch_rows) {
        const std::string test = tg_phase_key(a, r.b);
        if (!j["phases_vs_bound"].contains(test)) continue;
        for (const auto& [name, v] : j["phases_vs_bound"][test].items()) {
          const double ms = v["ms"].get<double>(), bound_ms = v["bound_ms"].get<double>();
          std::printf("| %5d | %-11s | %8.3f | %8.3f | %9.1f%% |\n", r.b, name.c_str(), ms,
                      bound_ms, 100.0 * bound_ms / ms);
        }
      }
    }
  }
  if (!prefill_gflops.empty()) {
    std::printf(
        "\nprefill arithmetic (weights, attention, last-token lm_head; peaks measured before / "
        "after the prefill runs, the higher taken: bf16 dot %.1f / %.1f, f32 FMA %.1f / %.1f "
        "GFLOP/s):\n",
        bf16_peaks.front(), bf16_peaks.back(), fma_peaks.front(), fma_peaks.back());
    for (const auto& [n, g] : prefill_gflops) {
      std::printf(
          "  pp%-6d %8.1f GFLOP/s = %5.1f%% of the bf16-dot peak, %5.1f%% of the FMA peak\n", n, g,
          100.0 * g / bf16_peak, 100.0 * g / fma_peak);
    }
  }
  if (!ctx.empty()) {
    if (a.context_fill == "synthetic")
      std::printf(
          "\ncontexts filled with random cache rows (--context-fill synthetic): a "
          "diagnostic, not a measurement of the model; 'prefill s' is the fill time\n");
    std::printf(
        "\n| %8s | %10s | %16s | %8s |\n|---------:|-----------:|-----------------:|---------:|\n",
        "context", "prefill s", "TPOT ms", "ratio");
    for (const auto& [cl, r] : ctx)
      std::printf("| %8d | %10.2f | %7.2f ± %6.2f | %8.2f |\n", cl, r.first, r.second.mean,
                  r.second.stddev, r.second.mean / ctx.front().second.second.mean);
  }
  return 0;
}

}  // namespace

void register_bench_model_command(CLI::App& app) {
  auto* a = &command_options<BenchModelArgs>();
  auto* cmd = app.add_subcommand(
      "bench-model",
      "Model speed in-process, llama-bench shapes: prefill tok/s (pp), batched decode tok/s "
      "(tg), decode roofline, long-context TPOT");
  cmd->add_option("--model", a->model, "Checkpoint directory")->required();
  cmd->add_option("--threads", a->n_threads, "Compute threads (0: all)")->capture_default_str();
  cmd->add_option("--prefill", a->prefill, "Prompt lengths, one forward each (pp)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--decode-batch", a->decode_batch, "Decode batch sizes (tg)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--decode-tokens", a->decode_tokens, "Tokens decoded per sequence (tg)")
      ->capture_default_str();
  cmd->add_option("--decode-context", a->decode_context,
                  "Contexts for long-context decode TPOT (e.g. 2048,32768; default: none)")
      ->delimiter(',');
  cmd->add_flag("--context-only", a->context_only,
                "Run only the --decode-context tests (no pp / tg; the roofline is still printed)");
  cmd->add_option("--context-steps", a->context_steps, "Timed decode steps per context")
      ->capture_default_str();
  cmd->add_option("--context-chunk", a->context_chunk, "Prefill chunk filling the context")
      ->capture_default_str();
  cmd->add_option("--context-fill", a->context_fill,
                  "How the context is filled: prefill (chunked prefill of random ids: the "
                  "measurement) | synthetic (random cache rows, seconds instead of minutes; a "
                  "diagnostic for kernel work, never a reported TPOT)")
      ->check(CLI::IsMember({"prefill", "synthetic"}))
      ->capture_default_str();
  cmd->add_option("--repetitions,-r", a->repetitions, "Measured runs per test (after a warm-up)")
      ->capture_default_str();
  cmd->add_option("--page-size", a->page_size, "Tokens per KV-cache page")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--kv-cache-dtype", a->kv_cache_dtype,
                  "KV-cache storage: auto (fp8 for V3.2, bf16 for V3) | bf16 | f32 | fp8")
      ->check(CLI::IsMember({"auto", "bf16", "f32", "fp8"}))
      ->capture_default_str();
  add_weight_flags(cmd, a->weight_dtype, a->weight_layout, a->lm_head_dtype, a->matmul_dtype);
  cmd->add_option("--bandwidth-mib", a->bandwidth_mib, "Buffer of the read-bandwidth measurement")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed of the random token ids")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print one JSON object instead of tables");
  cmd->add_flag("--phase-times", a->phase_times,
                "Also time each pp / tg test's forward calls per phase (MLA, MoE and their parts, "
                "lm_head): ms and calls per forward, on stderr and in the JSON "
                "(phases_per_forward); ~0.1% of a batch-1 step");
  cmd->add_option("--ab-variants", a->ab_variants,
                  "Speed work: forward calls take variants 0..N-1 in turn, which code under "
                  "comparison reads with phase_variant() (base/phase_timer.h; a local edit), and "
                  "the phases are also reported per variant (phases_per_variant; implies "
                  "--phase-times)")
      ->check(CLI::Range(1, kMaxPhaseVariants))
      ->capture_default_str();
  cmd->callback([a] { exit_code = run_bench_model(*a); });
}

}  // namespace dss::app
