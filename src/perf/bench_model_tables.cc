// The text report of `dsserve bench-model` (without --json): the same figures as the JSON, as
// tables in the run's order. print_bench_model_tables is declared in bench_model_state.h.
#include <cstdio>
#include <string>

#include "kv/kv_cache.h"
#include "perf/bench_model_state.h"
#include "perf/phase_report.h"

namespace dss::perf {

namespace {

std::string mb(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(bytes) * 1e-6);
  return buf;
}

// The setting, the tok/s of every test, the batch-1 weight bytes and its roofline.
void print_summary(const BenchModelState& s) {
  const BenchModelOptions& a = s.a;
  const cpu::CpuDescription& cpu = s.cpu_info;
  std::printf(
      "model %s (%s), %d threads, weights %s (%s layout), matmul %s, KV cache %s, %d "
      "repetitions + warm-up\n",
      a.model.c_str(), model_arch_name(s.m.config().arch).c_str(), s.m.n_threads(),
      a.weight_dtype == WeightDType::kAsStored ? "as stored" : to_string(a.weight_dtype),
      to_string(a.weight_layout), s.m.matmul_bf16() ? "bf16" : "f32", kv_dtype_name(s.kv_dtype),
      a.repetitions);
  std::printf("cpu %s (%s family %d model %d stepping %d), Highway target %s, bf16 dot %s\n",
              cpu.brand.empty() ? "(no brand string)" : cpu.brand.c_str(), cpu.vendor.c_str(),
              cpu.family, cpu.model, cpu.stepping, cpu.target.c_str(), cpu.bf16_dot ? "yes" : "no");
  std::printf("read bandwidth: %.1f GB/s before, %.1f GB/s after the runs", s.bw_before,
              s.bw_after);
  if (s.bs1_tok_s > 0) {
    std::printf(" (%.1f / %.1f right before / after batch 1)", s.bw_bs1.front(), s.bw_bs1.back());
  }
  std::printf("; the roofline uses the highest\n\n");
  std::printf("| %-14s | %15s |\n|%s|%s:|\n", "test", "tok/s", std::string(16, '-').c_str(),
              std::string(16, '-').c_str());
  for (const auto& [name, st] : s.rows)
    std::printf("| %-14s | %7.2f ± %5.2f |\n", name.c_str(), st.mean, st.stddev);
  std::printf(
      "\nweight bytes read per decoded token at batch 1 (stored dtypes, scales included):\n");
  for (const auto& [part, b] : s.bytes.parts)
    std::printf("  %-16s %14s MB\n", part.c_str(), mb(b).c_str());
  std::printf("  %-16s %14s MB\n", "total", mb(s.bytes.total).c_str());
  std::printf("roofline at batch 1: %.1f GB/s / %s MB = %.1f tok/s", s.bw,
              mb(s.bytes.total).c_str(), s.roofline);
  if (s.bs1_tok_s > 0)
    std::printf("; decode bs1 reaches %.1f%% of it", 100.0 * s.bs1_tok_s / s.roofline);
  std::printf("\n");
  if (s.bs1_tok_s > 0) {
    std::printf("decode bs1 per repetition against the higher bandwidth sample around it:");
    for (size_t i = 0; i < s.pct_bs1.size(); ++i)
      std::printf(" %.1f%% (%.1f / %.1f GB/s)", s.pct_bs1[i], s.bw_bs1[i], s.bw_bs1[i + 1]);
    std::printf("; median %.1f%%\n", s.pct_bs1_median);
  }
}

// Each batch against its weight bytes per step (the routed experts its tokens chose).
void print_batch_rooflines(const BenchModelState& s) {
  std::printf(
      "\ndecode against each batch's weight bytes per step (the routed experts its tokens chose, "
      "each once per layer) at %.1f GB/s:\n",
      s.bw);
  std::printf(
      "| batch | experts/layer | MB/step | roofline tok/s | tok/s | %% of it | x bs1 | roofline "
      "x bs1 |\n|------:|--------------:|--------:|---------------:|------:|--------:|------:|"
      "--------------:|\n");
  for (const BatchRow& r : s.batch_rows) {
    const double rl = r.roofline_tok_s;
    if (s.bytes.n_moe_layers > 0) {
      std::printf("| %5d | %13.2f |", r.b, r.routed_reads_per_step / s.bytes.n_moe_layers);
    } else {
      std::printf("| %5d | %13s |", r.b, "-");
    }
    std::printf(" %7.1f | %14.1f | %5.1f | %6.1f%% |", r.step_bytes / 1e6, rl, r.tok_s,
                100.0 * r.tok_s / rl);
    if (s.bs1_tok_s > 0) {
      std::printf(" %5.2f | %13.2f |\n", r.tok_s / s.bs1_tok_s, rl / s.roofline);
    } else {
      std::printf("     - |             - |\n");
    }
  }
}

// Each batch against its bytes-and-FLOPs bound, and (--phase-times) its phases against theirs.
void print_batch_bounds(const BenchModelState& s) {
  std::printf(
      "\ndecode against each batch's bytes-and-FLOPs bound (per phase the slower of its weight "
      "bytes at %.1f GB/s and its FLOPs at the %s peak, %.1f GFLOP/s; phases named where the "
      "FLOPs are the slower):\n",
      s.bw, s.bf16_arith ? "bf16-dot" : "f32 FMA", s.peak);
  std::printf(
      "| batch | GFLOP/step | bound ms | bound tok/s | tok/s | %% of it | bound x bs1 | "
      "FLOP-bound phases |\n|------:|-----------:|---------:|------------:|------:|--------:|"
      "------------:|:------------------|\n");
  for (const BatchRow& r : s.batch_rows) {
    const double bound_tok_s = r.b / r.bound.seconds;
    std::string flop_bound;
    for (const BoundPhase& p : r.bound.phases) {
      if (p.flops_s > p.bytes_s) flop_bound += (flop_bound.empty() ? "" : ", ") + p.name;
    }
    std::printf("| %5d | %10.3f | %8.2f | %11.1f | %5.1f | %6.1f%% |", r.b, r.flops.total * 1e-9,
                r.bound.seconds * 1e3, bound_tok_s, r.tok_s, 100.0 * r.tok_s / bound_tok_s);
    if (s.bs1_bound_s > 0) {
      std::printf(" %11.2f |", bound_tok_s * s.bs1_bound_s);
    } else {
      std::printf(" %11s |", "-");
    }
    std::printf(" %s |\n", flop_bound.empty() ? "-" : flop_bound.c_str());
  }
  if (!s.j.contains("phases_vs_bound")) return;
  std::printf(
      "\nphases per step against their bound (--phase-times; mla holds the attention and "
      "the V3.2 indexer):\n| batch | phase       |       ms | bound ms | bound / ms |\n"
      "|------:|:------------|---------:|---------:|-----------:|\n");
  const OrderedJson& pvb = s.j["phases_vs_bound"];
  for (const BatchRow& r : s.batch_rows) {
    const std::string test = tg_phase_key(s.a.decode_tokens, r.b);
    if (!pvb.contains(test)) continue;
    for (const auto& [name, v] : pvb[test].items()) {
      const double ms = v["ms"].get<double>(), bound_ms = v["bound_ms"].get<double>();
      std::printf("| %5d | %-11s | %8.3f | %8.3f | %9.1f%% |\n", r.b, name.c_str(), ms, bound_ms,
                  100.0 * bound_ms / ms);
    }
  }
}

// Prefill GFLOP/s against the peaks, then the long-context TPOT table.
void print_prefill_and_contexts(const BenchModelState& s) {
  if (!s.prefill_gflops.empty()) {
    std::printf(
        "\nprefill arithmetic (weights, attention, last-token lm_head; peaks measured before / "
        "after the prefill runs, the higher taken: bf16 dot %.1f / %.1f, f32 FMA %.1f / %.1f "
        "GFLOP/s):\n",
        s.bf16_peaks.front(), s.bf16_peaks.back(), s.fma_peaks.front(), s.fma_peaks.back());
    for (const auto& [n, g] : s.prefill_gflops) {
      std::printf(
          "  pp%-6d %8.1f GFLOP/s = %5.1f%% of the bf16-dot peak, %5.1f%% of the FMA peak\n", n, g,
          100.0 * g / s.bf16_peak, 100.0 * g / s.fma_peak);
    }
  }
  if (s.ctx.empty()) return;
  if (s.a.context_fill == "synthetic")
    std::printf(
        "\ncontexts filled with random cache rows (--context-fill synthetic): a "
        "diagnostic, not a measurement of the model; 'prefill s' is the fill time\n");
  std::printf(
      "\n| %8s | %10s | %16s | %8s |\n|---------:|-----------:|-----------------:|---------:|\n",
      "context", "prefill s", "TPOT ms", "ratio");
  for (const auto& [cl, r] : s.ctx)
    std::printf("| %8d | %10.2f | %7.2f ± %6.2f | %8.2f |\n", cl, r.first, r.second.mean,
                r.second.stddev, r.second.mean / s.ctx.front().second.second.mean);
}

// MTP speculative decoding's step times and the speedups they imply (report_spec's JSON).
void print_spec(const BenchModelState& s) {
  if (s.spec.empty()) return;
  const int32_t k = s.a.spec_steps;
  std::printf("\nspeculative decoding (MTP, K = %d, context %d): step medians in ms\n", k,
              s.a.spec_context);
  std::printf(
      "| batch | plain | verify K+1 | verify/plain | its weight bytes/plain | MTP catch-up | MTP "
      "draft | draft/plain | cycle | implied speedup at 0.6 / 0.8 / 0.9 |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const SpecStepTimes& t : s.spec) {
    std::printf(
        "| %d | %.2f | %.2f | %.2fx | %.2fx | %.2f | %.2f | %.2fx | %.2f | %.2fx / %.2fx / "
        "%.2fx |\n",
        t.batch, t.plain_ms, t.verify_ms, t.verify_ms / t.plain_ms,
        s.bytes.step_bytes(t.verify_routed_reads) / s.bytes.step_bytes(t.plain_routed_reads),
        t.catchup_ms, t.draft_ms, t.draft_ms / t.plain_ms, t.cycle_ms(k),
        expected_tokens_per_cycle(0.6, k) * t.plain_ms / t.cycle_ms(k),
        expected_tokens_per_cycle(0.8, k) * t.plain_ms / t.cycle_ms(k),
        expected_tokens_per_cycle(0.9, k) * t.plain_ms / t.cycle_ms(k));
  }
  std::printf(
      "(random weights accept almost no draft: the speedups are implied by the step "
      "times, not measured)\n");
}

}  // namespace

void print_bench_model_tables(const BenchModelState& s) {
  print_summary(s);
  if (!s.batch_rows.empty()) {
    print_batch_rooflines(s);
    print_batch_bounds(s);
  }
  print_prefill_and_contexts(s);
  print_spec(s);
}

}  // namespace dss::perf
