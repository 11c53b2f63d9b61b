// Rotary position embedding with YaRN, as DeepSeek's reference computes it
// (docs/deepseek-reference.md section 2.4):
//   f_i = theta^(-2i/d), i < d/2;  with YaRN (factor > 1):
//   low = max(floor(corr(beta_fast)), 0), high = min(ceil(corr(beta_slow)), d - 1),
//   corr(r) = d * ln(L0 / (2 pi r)) / (2 ln theta);  ramp_i = clamp((i - low)/(high - low), 0, 1);
//   f'_i = f_i / factor * ramp_i + f_i * (1 - ramp_i).
// The rotations themselves are the backend's (mla_rope_rows, indexer_rope_quant): angles
// float32(pos) * f'_i in float32, then cos/sin (torch.polar on float32 angles).
#pragma once

#include <cstdint>
#include <vector>

#include "io/model_config.h"

namespace dss {

class RopeTable {
 public:
  explicit RopeTable(const ModelConfig& cfg);
  int32_t n_pairs() const { return static_cast<int32_t>(freqs_.size()); }
  const std::vector<float>& freqs() const { return freqs_; }

 private:
  std::vector<float> freqs_;  // [d_rope / 2]
};

}  // namespace dss
