// Engine options (flag names in comments). Zero means "derive from the model and machine".
#pragma once

#include <cstdint>
#include <string>

#include "model/runtime/load_options.h"

namespace dss {

// --speculative-algorithm (SGLang's names): kNone; kNgram (drafts copied from the sequence's
// own earlier tokens: the continuation of the latest earlier occurrence of its last n tokens,
// n from ngram_max down to ngram_min; prompt-lookup decoding); kNextn (DeepSeek's MTP module:
// engine/mtp_drafter.h). Every draft is verified by the target model (docs/speculative.md).
enum class SpecAlgorithm { kNone, kNgram, kNextn };
struct SpeculativeOptions {
  SpecAlgorithm algorithm = SpecAlgorithm::kNone;
  int32_t num_steps = 2;  // --speculative-num-steps: draft tokens per decode step (K)
  // --speculative-num-draft-tokens: SGLang's K + 1 (0: unset); anything else is an error.
  int32_t num_draft_tokens = 0;
  int32_t eagle_topk = 1;  // --speculative-eagle-topk: only 1 (a chain)
  // --speculative-ngram-{min,max}-match-window-size
  int32_t ngram_min = 1, ngram_max = 4;
};

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
  // How the model is placed (model/runtime/load_options.h): --weight-dtype, --weight-layout,
  // --lm-head-dtype, --matmul-dtype, --act-quant.
  WeightDType weight_dtype = WeightDType::kAsStored;
  WeightStorage weight_layout = WeightStorage::kTiled;
  WeightDType lm_head_dtype = WeightDType::kAsStored;
  MatmulDType matmul_dtype = MatmulDType::kF32;
  ActQuant act_quant = ActQuant::kNone;
  Device device = Device::kCpu;  // --device
  // --ep-size equal to --tp-size: the routed experts partitioned over the tensor-parallel group.
  bool expert_parallel = false;
  // --weight-cache DIR: the placed weights kept in a file there and mapped on later starts
  // (model/deepseek/weight_cache.h; empty: off).
  std::string weight_cache_dir;
  // --dist-timeout: seconds a step of a parallel job may stall before the job is ended (0: auto;
  // engine/step_watchdog.h).
  double dist_timeout_s = 0.0;
  double slo_tpot_ms = 0.0;  // --slo-tpot-ms: dynamic batch cap target (0: off)
  double slo_ttft_ms = 0.0;  // --slo-ttft-ms: lets a lowered cap rise (0: off)
  // --request-timeout: seconds from arrival after which a request ends with an error (0: off).
  double request_timeout_s = 0.0;
  // --max-queue-time: seconds a request may wait before it is first scheduled (0: off).
  double max_queue_time_s = 0.0;
  SpeculativeOptions speculative;
  bool debug_integrity = false;  // check page accounting after every step (tests)
};

}  // namespace dss
