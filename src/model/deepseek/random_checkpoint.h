// Writes a random-weight DeepSeek-V3 checkpoint in the official Hugging Face layout (config.json,
// sharded safetensors, index) for a given config: the default demo model, the benchmark model
// and test fixtures come from here.
//
// Values follow the golden generator's recipe: linear weights N(0, (gain/sqrt(fan_in))^2), norm
// weights 1 + 0.1 N(0,1), routing bias N(0, 0.01), embeddings N(0,1). Each tensor's values depend
// only on (seed, tensor name). FP8 weights are quantised per 128x128 block (scale = amax/448, or
// the next power of two for ue8m0) with round-to-nearest-even e4m3 codes.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "io/json.h"

namespace dss {

struct RandomCheckpointOptions {
  std::string out_dir;
  uint64_t seed = 0;
  bool fp8 = true;                    // else BF16 weights, no quantization_config
  size_t shard_bytes = 512ull << 20;  // shard size
  // Called with (tensors written, total) for progress; may be empty.
  void (*progress)(int64_t, int64_t) = nullptr;
};

// `hf_config` is a config.json object without quantization_config (added when fp8).
Status write_random_checkpoint(const Json& hf_config, const RandomCheckpointOptions& opts);

// The built-in presets: "tiny" (golden tiny-v3 shapes, real vocabulary), "ds-mini"
// (the benchmark shape, identical to shared/configs/ds-mini.json), their V3.2 forms "tiny-v32"
// and "ds-mini-v32", and "v3-layers": DeepSeek-V3 671B's real layer shapes (hidden 7168, 128
// heads, 256 experts of 2048) in 3 layers, 1 dense + 2 MoE, for load-rate measurements.
Result<Json> preset_config(const std::string& name);

}  // namespace dss
