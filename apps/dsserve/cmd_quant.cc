// Quantisation subcommands: convert, eval-quant (docs/quantization.md).
#include <cstdio>
#include <string>
#include <vector>

#include "apps/dsserve/commands.h"
#include "base/clock.h"
#include "model/deepseek/convert_checkpoint.h"
#include "perf/eval_quant.h"

namespace dss::app {

namespace {

void print_progress(int64_t done, int64_t total) {
  static int last = -1;
  const int pct = total > 0 ? static_cast<int>(100 * done / total) : 100;
  if (pct == last) return;
  last = pct;
  const int filled = pct * 30 / 100;
  std::fprintf(stderr, "\rconvert: [%.*s%*s] %3d%% %lld/%lld MiB", filled,
               "##############################", 30 - filled, "", pct,
               static_cast<long long>(done >> 20), static_cast<long long>(total >> 20));
  if (done == total) std::fprintf(stderr, "\n");
}

struct ConvertArgs {
  std::string in, out, to;
  std::vector<std::string> exclude = QuantPolicy::default_excludes();
  bool quiet = false;
};

void add_convert(CLI::App& app) {
  auto* a = &command_options<ConvertArgs>();
  auto* cmd = app.add_subcommand(
      "convert",
      "Rewrite a checkpoint with its linear weights in bf16, fp8 or int8 (official layout)");
  cmd->add_option("--model", a->in, "Input checkpoint directory")->required();
  cmd->add_option("--out", a->out, "Output directory")->required();
  cmd->add_option("--to", a->to,
                  "bf16 (FP8 dequantised, RNE) | fp8 (e4m3, 128x128 block scales) | int8 "
                  "(per-output-channel, SGLang w8a8_int8 layout)")
      ->required()
      ->check(CLI::IsMember({"bf16", "fp8", "int8"}));
  cmd->add_option("--exclude", a->exclude,
                  "Comma-separated name substrings of 2-D weights to keep as they are; replaces "
                  "the default list ('' excludes nothing)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_flag("--quiet", a->quiet, "No progress bar");
  cmd->callback([a] {
    ConvertOptions o;
    o.in_dir = a->in;
    o.out_dir = a->out;
    auto to = parse_weight_dtype(a->to, "--to");
    o.policy.to = *to;
    o.policy.exclude = a->exclude;
    if (!a->quiet) o.progress = print_progress;
    const double t0 = now_seconds();
    if (report_failure("convert", convert_checkpoint(o))) return;
    if (!a->quiet)
      std::fprintf(stderr, "convert: wrote %s (%s) in %.1f s\n", a->out.c_str(), a->to.c_str(),
                   now_seconds() - t0);
  });
}

void add_eval_quant(CLI::App& app) {
  auto* o = &command_options<perf::EvalQuantOptions>();
  auto* cmd = app.add_subcommand(
      "eval-quant",
      "Compare candidate weight/activation formats with a reference: top-1 agreement, KL, max "
      "logit error, weight memory, decode tok/s");
  const char* spec = " (spec: DIR[,weight-dtype=bf16|fp8|int8][,act-quant=none|fp8][,label=NAME])";
  cmd->add_option("--model", o->ref, std::string("Reference model") + spec)->required();
  cmd->add_option("--candidate", o->candidates, std::string("Candidate model, repeatable") + spec)
      ->required();
  cmd->add_option("--prompts", o->prompts_file,
                  "JSONL of {\"prompt_ids\": [...]} (default: --n-prompts seeded random prompts)");
  cmd->add_option("--n-prompts", o->n_prompts, "Random prompts when no --prompts")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--prompt-len", o->prompt_len, "Tokens per random prompt")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--decode-tokens", o->decode_tokens, "Greedy decode steps per prompt (timing)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the random prompts")->capture_default_str();
  cmd->add_option("--threads", o->n_threads, "Compute threads (0: all)")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print JSON instead of a markdown table");
  cmd->callback([o] { report_failure("eval-quant", perf::eval_quant(*o)); });
}

}  // namespace

void register_quant_commands(CLI::App& app) {
  add_convert(app);
  add_eval_quant(app);
}

}  // namespace dss::app
