// BenchModelOptions: what `dsserve bench-model` measures and how (one field per flag; the flag
// names and help are apps/dsserve/cmd_bench_model.cc's). Plain data; validate() checks it before
// the model loads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/runtime/load_options.h"

namespace dss::perf {

struct BenchModelOptions {
  std::string model;                               // --model: checkpoint directory
  int32_t n_threads = 0;                           // --threads (0: all)
  std::vector<int32_t> prefill = {512, 2048};      // --prefill: ppN lengths
  std::vector<int32_t> decode_batch = {1, 4, 16};  // --decode-batch: tgT batch sizes
  int32_t decode_tokens = 128;                     // --decode-tokens: T
  std::vector<int32_t> decode_context;             // --decode-context: long-context TPOT
  int32_t context_steps = 32;                      // --context-steps
  int32_t context_chunk = 2048;                    // --context-chunk
  int32_t repetitions = 3;                         // --repetitions
  int32_t page_size = 64;                          // --page-size
  std::string kv_cache_dtype = "auto";             // auto: fp8 for V3.2, bf16 for V3 (as serve)
  // --weight-dtype, ... --matmul-dtype (model/runtime/load_options.h)
  WeightDType weight_dtype = WeightDType::kAsStored;
  WeightStorage weight_layout = WeightStorage::kTiled;
  Device device = Device::kCpu;  // --device
  WeightDType lm_head_dtype = WeightDType::kAsStored;
  MatmulDType matmul_dtype = MatmulDType::kAuto;
  int64_t bandwidth_mib = 1024;  // --bandwidth-mib: buffer of each read-bandwidth sample
  uint64_t seed = 1234;          // --seed: the random token ids
  bool json = false;             // --json: one JSON object instead of tables
  bool phase_times = false;      // --phase-times (base/phase_timer.h)
  int32_t ab_variants = 1;       // --ab-variants: forward calls alternate variants (phase_timer.h)
  bool context_only = false;     // --context-only: skip the pp and tg tests
  std::string context_fill = "prefill";  // prefill | synthetic (diagnostic, BatchDriver)
  // --speculative-algorithm nextn: also time the steps of MTP speculative decoding
  // (spec_runs.h) at these batch sizes, K draft tokens, every sequence at spec_context tokens.
  bool speculative = false;
  int32_t spec_steps = 2;                     // --speculative-num-steps
  std::vector<int32_t> spec_batch = {1, 16};  // --spec-batch
  int32_t spec_context = 256;                 // --spec-context
  std::string weight_cache_dir;               // --weight-cache (model/deepseek/weight_cache.h)
};

// Ok, or the first flag out of range ("--decode-tokens must be >= 1"). --prefill must not be
// empty: the prefill runs measure the arithmetic peaks the decode batches' bounds need.
Status validate(const BenchModelOptions& a);

}  // namespace dss::perf
