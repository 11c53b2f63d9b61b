// Engine options (flag names in comments). Zero means "derive from the model and machine".
#pragma once

#include <cstdint>
#include <string>

namespace dss {

struct EngineOptions {
  std::string model_dir;   // --model
  int32_t page_size = 64;  // --page-size (tokens per KV page; any value >= 1)
  // --kv-cache-dtype auto | bf16 | f32 | fp8 (auto: fp8 for V3.2 models, bf16 otherwise;
  // docs/kv_layout.md)
  std::string kv_cache_dtype = "auto";
  int64_t kv_cache_memory_bytes =
      0;  // --kv-cache-memory (0: --kv-cache-fraction of available memory)
  double kv_cache_fraction = 0.25;  // --kv-cache-fraction of MemAvailable, capped by what is useful
  int32_t max_total_tokens = 0;     // --max-total-tokens: KV pool size in tokens (overrides memory)
  int32_t max_running_requests = 32;    // --max-running-requests
  int32_t chunked_prefill_size = 2048;  // --chunked-prefill-size: tokens per step
  int32_t context_length = 0;           // --context-length (0: min(max_position_embeddings, 32768))
  bool enable_prefix_cache = true;      // --disable-prefix-cache
  uint64_t seed = 0;                    // --seed: sampling seed for requests without their own
  int32_t n_threads = 0;                // --threads: compute threads (0: all hardware threads)
  std::string weight_dtype;             // --weight-dtype: "" (as stored) | bf16 | fp8 | int8
  std::string weight_layout = "tiled";  // --weight-layout: tiled | mmap (LoadOptions)
  std::string lm_head_dtype;            // --lm-head-dtype: "" (as stored) | bf16 | fp8 | int8
  std::string matmul_dtype = "f32";     // --matmul-dtype: f32 | bf16 | auto (LoadOptions)
  std::string act_quant = "none";       // --act-quant none | fp8 (W8A8 for FP8 weights)
  double slo_tpot_ms = 0.0;             // --slo-tpot-ms: dynamic batch cap target (0: off)
  double slo_ttft_ms = 0.0;             // --slo-ttft-ms: lets a lowered cap rise (0: off)
  // --request-timeout: seconds from arrival after which a request ends with an error (0: off).
  double request_timeout_s = 0.0;
  // --max-queue-time: seconds a request may wait before it is first scheduled (0: off).
  double max_queue_time_s = 0.0;
  bool debug_integrity = false;  // check page accounting after every step (tests)
};

}  // namespace dss
