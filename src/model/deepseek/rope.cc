#include "model/deepseek/rope.h"

#include <algorithm>
#include <cmath>

namespace dss {

RopeTable::RopeTable(const ModelConfig& cfg) {
  const int32_t d = cfg.d_rope;
  const double base = cfg.rope_theta;
  freqs_.resize(static_cast<size_t>(d / 2));
  for (int32_t i = 0; i < d / 2; ++i) {
    freqs_[static_cast<size_t>(i)] =
        static_cast<float>(1.0 / std::pow(base, static_cast<double>(2 * i) / d));
  }
  if (!cfg.rope.yarn || cfg.rope.factor <= 1.0f) return;
  const double L0 = cfg.rope.original_max_position;
  auto corr = [&](double r) {
    return d * std::log(L0 / (r * 2.0 * M_PI)) / (2.0 * std::log(base));
  };
  double low = std::max(std::floor(corr(cfg.rope.beta_fast)), 0.0);
  double high = std::min(std::ceil(corr(cfg.rope.beta_slow)), static_cast<double>(d - 1));
  if (low == high) high += 0.001;
  for (int32_t i = 0; i < d / 2; ++i) {
    float ramp = static_cast<float>((i - low) / (high - low));
    ramp = std::clamp(ramp, 0.0f, 1.0f);
    const float smooth = 1.0f - ramp;
    const float f = freqs_[static_cast<size_t>(i)];
    freqs_[static_cast<size_t>(i)] = f / cfg.rope.factor * (1.0f - smooth) + f * smooth;
  }
}

}  // namespace dss
