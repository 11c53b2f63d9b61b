#include "apps/dsserve/bench_flags.h"

#include <charconv>
#include <cmath>
#include <filesystem>

#include "apps/dsserve/default_tokenizer_dir.h"

namespace dss::app {

void add_bench_flags(CLI::App* cmd, bench::BenchOptions& o, BenchFlagText& t) {
  cmd->add_option("--scenario", o.scenario,
                  "chat-256 (256 in/256 out, chat) | doc-2k (2048/256, completions) | doc-32k "
                  "(32768/256, completions) | stream-1k-2k (1024/2048, chat) | custom")
      ->capture_default_str();
  cmd->add_option("--input-len", o.input_len, "Prompt tokens (default: the scenario's)");
  cmd->add_option("--output-len", o.output_len,
                  "Output tokens, sent as max_tokens (default: the scenario's)");
  cmd->add_option(
         "--range-ratio", o.range_ratio,
         "Lengths are uniform integers in [L(1-r), L(1+r)] for L = input and output length")
      ->capture_default_str();
  cmd->add_option("--num-prompts", o.num_prompts, "Requests measured")->capture_default_str();
  cmd->add_option("--request-rate", t.request_rate,
                  "Poisson arrivals at this many requests/s; inf = all at once")
      ->capture_default_str();
  cmd->add_option("--max-concurrency", o.max_concurrency,
                  "Requests in flight at most (0 = unlimited)")
      ->capture_default_str();
  cmd->add_flag("--ignore-eos", o.ignore_eos, "Send ignore_eos so every request yields max_tokens");
  cmd->add_option("--shared-prefix-len", o.shared_prefix_len,
                  "The first N prompt tokens are the same in every request (prefix cache); "
                  "counted inside --input-len")
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of prompts, lengths and arrivals")->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "Unmeasured requests sent first")->capture_default_str();
  cmd->add_option("--endpoint", o.endpoint,
                  "chat (/v1/chat/completions, text message) | completions (/v1/completions, "
                  "token-id prompt); default: the scenario's");
  cmd->add_option("--slo", t.slo,
                  "Goodput targets, e.g. ttft:500,tpot:100 (ms; keys ttft, tpot, e2el)");
  cmd->add_option("--tokenizer", o.tokenizer_dir,
                  "Directory with tokenizer.json used to build exact-length prompts (default: "
                  "--model's directory when it has one, else $DSS_TOKENIZER_DIR, else "
                  "third_party/tokenizer/deepseek-v3 above the executable, from scripts/setup)");
  cmd->add_flag("--no-progress", t.no_progress,
                "No progress bar (it is drawn only on a TTY anyway)");
}

Status finish_bench_flags(const BenchFlagText& t, bench::BenchOptions& o) {
  if (t.request_rate == "inf") {
    o.request_rate = INFINITY;
  } else {
    double r = 0;
    auto [p, ec] =
        std::from_chars(t.request_rate.data(), t.request_rate.data() + t.request_rate.size(), r);
    if (ec != std::errc() || p != t.request_rate.data() + t.request_rate.size() || !(r > 0))
      return Status::error("--request-rate: '", t.request_rate,
                           "' is not a positive number or inf");
    o.request_rate = r;
  }
  auto slo = bench::parse_slo(t.slo);
  if (!slo) return slo.status();
  o.slo = *slo;
  o.progress = !t.no_progress;
  if (o.tokenizer_dir.empty()) o.tokenizer_dir = default_tokenizer_dir();
  if (o.tokenizer_dir.empty())
    return Status::error(
        "--tokenizer: not given, and no default ($DSS_TOKENIZER_DIR is unset and no "
        "third_party/tokenizer/deepseek-v3 lies above the executable)");
  return Status::ok();
}

}  // namespace dss::app
