#include "apps/dsserve/engine_flags.h"

#include <cctype>
#include <string>

namespace dss::app {

void add_engine_flags(CLI::App* cmd, EngineOptions& o, bool model_required) {
  auto* m = cmd->add_option("--model", o.model_dir,
                            "Checkpoint directory (config.json + safetensors [+ tokenizer])");
  if (model_required) m->required();
  cmd->add_option("--page-size", o.page_size, "Tokens per KV-cache page (any value >= 1)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--kv-cache-dtype", o.kv_cache_dtype,
                  "KV-cache latent storage: auto (fp8 for V3.2, bf16 for V3) | bf16 | f32 | fp8 "
                  "(e4m3 + a power-of-two scale per 128 values, rope key bf16; docs/kv_layout.md)")
      ->check(CLI::IsMember({"auto", "bf16", "f32", "fp8"}))
      ->capture_default_str();
  cmd->add_option("--kv-cache-memory", o.kv_cache_memory_bytes,
                  "KV-cache pool size in bytes (default: --kv-cache-fraction of available memory)");
  cmd->add_option("--kv-cache-fraction", o.kv_cache_fraction,
                  "Fraction of available memory for the KV cache (MemAvailable; with --device "
                  "cuda the device's free memory after the weights)")
      ->check(CLI::Range(0.001, 0.95))
      ->capture_default_str();
  cmd->add_option("--max-total-tokens", o.max_total_tokens,
                  "KV-cache pool size in tokens (overrides memory)");
  cmd->add_option("--max-running-requests", o.max_running_requests,
                  "Requests decoded together at most")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--chunked-prefill-size", o.chunked_prefill_size,
                  "Token budget per step, shared by decodes and prefill chunks")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option(
      "--context-length", o.context_length,
      "Longest prompt + max_tokens per request (default: min(max_position_embeddings, 32768))");
  cmd->add_flag(
      "--disable-prefix-cache", [&o](int64_t) { o.enable_prefix_cache = false; },
      "Do not reuse KV pages of shared prompt prefixes");
  cmd->add_option("--slo-tpot-ms", o.slo_tpot_ms,
                  "Dynamic batch cap: lower/raise the running-batch limit step by step to keep the "
                  "P99 time per output token under this (0: off)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--slo-ttft-ms", o.slo_ttft_ms,
                  "Dynamic batch cap: while P99 time to first token is over this, let the cap "
                  "rise up to the TPOT target (0: off)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--request-timeout", o.request_timeout_s,
                  "Seconds from arrival after which a request ends with an error (HTTP 504) and "
                  "its KV pages are released (0: off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--max-queue-time", o.max_queue_time_s,
                  "Seconds a request may wait for a batch slot before it ends with an error "
                  "(HTTP 503) (0: off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_weight_flags(cmd, o.weight_dtype, o.weight_layout, o.lm_head_dtype, o.matmul_dtype);
  add_act_quant_flag(cmd, o.act_quant);
  add_device_flag(cmd, o.device);
  cmd->add_option("--threads", o.n_threads,
                  "Compute threads of the forward pass (0: all hardware threads)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Sampling seed for requests without their own")
      ->capture_default_str();
  cmd->add_option("--weight-cache", o.weight_cache_dir,
                  "Directory for a file of the placed (tiled, converted) weights, written on the "
                  "first start and mapped from the page cache on later ones: no repack, no fresh "
                  "memory (docs/quantization.md)");
  add_speculative_flags(cmd, o.speculative);
}

void add_speculative_flags(CLI::App* cmd, SpeculativeOptions& o) {
  cmd->add_option_function<std::string>(
         "--speculative-algorithm",
         [&o](const std::string& s) {
           std::string v;
           for (const char ch : s)
             v += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
           o.algorithm = v == "none"    ? SpecAlgorithm::kNone
                         : v == "ngram" ? SpecAlgorithm::kNgram
                                        : SpecAlgorithm::kNextn;  // nextn | eagle
         },
         "Speculative decoding (docs/speculative.md): none | NEXTN (the checkpoint's MTP "
         "module drafts; EAGLE is an alias) | NGRAM (drafts copied from the sequence's own "
         "earlier tokens)")
      ->check(CLI::IsMember({"none", "nextn", "eagle", "ngram"}, CLI::ignore_case))
      ->default_str("none");
  cmd->add_option("--speculative-num-steps", o.num_steps,
                  "Draft tokens proposed per decode step and verified in one forward (K)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  cmd->add_option("--speculative-num-draft-tokens", o.num_draft_tokens,
                  "SGLang's spelling of the draft length: num-steps + 1 (0: from num-steps)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--speculative-eagle-topk", o.eagle_topk,
                  "Draft candidates per position (only 1: a chain of drafts)")
      ->check(CLI::Range(1, 1));
  cmd->add_option("--speculative-ngram-min-match-window-size", o.ngram_min,
                  "NGRAM: shortest tail of the sequence looked up")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--speculative-ngram-max-match-window-size", o.ngram_max,
                  "NGRAM: longest tail of the sequence looked up")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
}

void add_weight_flags(CLI::App* cmd, WeightDType& weight_dtype, WeightStorage& weight_layout,
                      WeightDType& lm_head_dtype, MatmulDType& matmul_dtype) {
  // Each flag's text is checked by IsMember, then parsed into the typed value.
  cmd->add_option_function<std::string>(
         "--weight-dtype",
         [&weight_dtype](const std::string& s) {
           weight_dtype = parse_weight_dtype_flag(s, "--weight-dtype").value();
         },
         "Convert the linear weights at load: bf16 | fp8 | int8 (default: as stored; "
         "lm_head, embedding, router and indexer head weights stay as stored)")
      ->check(CLI::IsMember({"bf16", "fp8", "int8"}));
  cmd->add_option_function<std::string>(
         "--lm-head-dtype",
         [&lm_head_dtype](const std::string& s) {
           lm_head_dtype = parse_weight_dtype_flag(s, "--lm-head-dtype").value();
         },
         "Convert lm_head at load: bf16 | fp8 | int8 (default: as stored, BF16 in "
         "DeepSeek's releases)")
      ->check(CLI::IsMember({"bf16", "fp8", "int8"}));
  cmd->add_option_function<std::string>(
         "--weight-layout",
         [&weight_layout](const std::string& s) {
           weight_layout = parse_weight_storage(s).value();
         },
         "tiled: repack the linear weights at load into the CPU kernels' tiled layout "
         "(an owned copy, faster decode) | mmap: read them in place from the mapped "
         "checkpoint (zero copy; float32 matmuls only); same results with --matmul-dtype f32")
      ->check(CLI::IsMember({"tiled", "mmap"}))
      ->default_str(to_string(weight_layout));
  matmul_dtype = MatmulDType::kAuto;
  cmd->add_option_function<std::string>(
         "--matmul-dtype",
         [&matmul_dtype](const std::string& s) { matmul_dtype = parse_matmul_dtype(s).value(); },
         "Arithmetic of the tiled FP8 / BF16 linear layers: f32 (DeepSeek's float32 "
         "reference arithmetic) | bf16 (activations rounded to bf16 and AVX512-BF16 dot "
         "products, as DeepSeek's own bf16 inference; ~1.5x the matmul rate; an error "
         "without AVX512-BF16) | auto (the faster of the two, timed at start-up on this CPU "
         "and cached per CPU model in ~/.cache/dsserve or $XDG_CACHE_HOME/dsserve; "
         "DSSERVE_MATMUL_REMEASURE=1 ignores the cache)")
      ->check(CLI::IsMember({"f32", "bf16", "auto"}))
      ->default_str("auto");
}

void add_act_quant_flag(CLI::App* cmd, ActQuant& act_quant) {
  cmd->add_option_function<std::string>(
         "--act-quant",
         [&act_quant](const std::string& s) { act_quant = parse_act_quant(s).value(); },
         "none | fp8: W8A8, activations into FP8 matmuls quantised per token per 128")
      ->check(CLI::IsMember({"none", "fp8"}))
      ->default_str(to_string(act_quant));
}

void add_device_flag(CLI::App* cmd, Device& device) {
  cmd->add_option_function<std::string>(
         "--device", [&device](const std::string& s) { device = parse_device(s).value(); },
         "cpu | cuda: run the model on CUDA device 0 (a CUDA build: make cuda; one process, "
         "docs/reference.md lists what the CUDA backend does not run yet)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->default_str(to_string(device));
}

}  // namespace dss::app
