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

void RopeTable::angles(int32_t pos, float* out_cos, float* out_sin) const {
  for (size_t i = 0; i < freqs_.size(); ++i) {
    const float a = static_cast<float>(pos) * freqs_[i];  // float32 product, as torch.outer
    out_cos[i] = static_cast<float>(std::cos(static_cast<double>(a)));
    out_sin[i] = static_cast<float>(std::sin(static_cast<double>(a)));
  }
}

void rope_rotate_interleaved(float* x, int32_t n_pairs, const float* cos, const float* sin) {
  for (int32_t i = 0; i < n_pairs; ++i) {
    const float a = x[2 * i], b = x[2 * i + 1];
    x[2 * i] = a * cos[i] - b * sin[i];
    x[2 * i + 1] = a * sin[i] + b * cos[i];
  }
}

}  // namespace dss
