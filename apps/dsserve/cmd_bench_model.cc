// `dsserve bench-model`: the model's own speed in-process, llama-bench shapes (perf/bench_model.h
// says what is measured and how). This file only maps the flags onto perf::BenchModelOptions and
// loads the model.
#include <cstdio>

#include "apps/dsserve/commands.h"
#include "apps/dsserve/engine_flags.h"
#include "apps/dsserve/parallel_flags.h"
#include "base/phase_timer.h"
#include "model/runtime/model.h"
#include "perf/bench_model.h"

namespace dss::app {

namespace {

ParallelArgs& parallel_args() {
  static ParallelArgs p;
  return p;
}

// Under mpirun (--tp-size T) every rank runs the same measurements in lockstep (the forwards'
// collectives pair up); rank 0 alone prints them. The figures are per rank of the group: the
// weight-byte bounds still count the whole model.
int run_bench_model_cmd(const perf::BenchModelOptions& a) {
  if (Status s = perf::validate(a); !s) {
    std::fprintf(stderr, "dsserve bench-model: %s\n", s.message().c_str());
    return 2;
  }
  const ParallelArgs& pa = parallel_args();
  Result<ParallelRun> par = start_parallel(pa);
  if (!par) {
    std::fprintf(stderr, "dsserve bench-model: %s\n", par.message().c_str());
    return 2;
  }
  if (par->rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) return 1;
  if (a.device == Device::kCuda && a.context_fill == "synthetic") {
    std::fprintf(stderr,
                 "dsserve bench-model: --context-fill synthetic writes the cache from the host; "
                 "with --device cuda use --context-fill prefill\n");
    return 2;
  }
  auto loaded =
      Model::load(LoadOptions{a.model, a.n_threads, a.weight_dtype, ActQuant::kNone,
                              a.weight_layout, a.lm_head_dtype, a.matmul_dtype, pa.ep_size > 1,
                              a.speculative, a.weight_cache_dir, par->dp_attention, a.device},
                  par->model_group());
  if (!loaded) {
    std::fprintf(stderr, "dsserve bench-model: %s\n", loaded.message().c_str());
    return 1;
  }
  perf::run_bench_model(**loaded, a);
  return 0;
}

}  // namespace

void register_bench_model_command(CLI::App& app) {
  auto* a = &command_options<perf::BenchModelOptions>();
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
  add_device_flag(cmd, a->device);
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
  cmd->add_option_function<std::string>(
         "--speculative-algorithm", [a](const std::string& v) { a->speculative = v != "none"; },
         "nextn: also time the steps of MTP speculative decoding (verify, the module's catch-up "
         "and chained draft steps) against a plain decode step, and the speedup they imply at "
         "acceptance rates 0.6 / 0.8 / 0.9 (the checkpoint needs the MTP module)")
      ->check(CLI::IsMember({"none", "nextn"}, CLI::ignore_case));
  cmd->add_option("--speculative-num-steps", a->spec_steps, "Draft tokens per verify step (K)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  cmd->add_option("--spec-batch", a->spec_batch, "Batch sizes of the speculative step timings")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--spec-context", a->spec_context,
                  "Cached tokens per sequence during the speculative step timings")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--weight-cache", a->weight_cache_dir,
                  "Map the placed weights from a file in this directory (written on first use)");
  add_parallel_flags(cmd, parallel_args());
  cmd->callback([a] { exit_code = run_bench_model_cmd(*a); });
}

}  // namespace dss::app
