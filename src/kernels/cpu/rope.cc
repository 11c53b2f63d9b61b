#include "kernels/cpu/rope.h"

#include <cmath>

namespace dss::cpu {

void rope_angles(const float* freqs, int32_t n_pairs, int32_t pos, float* cos, float* sin) {
  for (int32_t i = 0; i < n_pairs; ++i) {
    const float a = static_cast<float>(pos) * freqs[i];  // float32 product, as torch.outer
    cos[i] = static_cast<float>(std::cos(static_cast<double>(a)));
    sin[i] = static_cast<float>(std::sin(static_cast<double>(a)));
  }
}

void rope_rotate_interleaved(float* x, int32_t n_pairs, const float* cos, const float* sin) {
  for (int32_t i = 0; i < n_pairs; ++i) {
    const float a = x[2 * i], b = x[2 * i + 1];
    x[2 * i] = a * cos[i] - b * sin[i];
    x[2 * i + 1] = a * sin[i] + b * cos[i];
  }
}

void rope_rotate_half_split(float* x, int32_t n_pairs, const float* cos, const float* sin) {
  for (int32_t i = 0; i < n_pairs; ++i) {
    const float a = x[i], b = x[i + n_pairs];
    x[i] = a * cos[i] - b * sin[i];
    x[i + n_pairs] = a * sin[i] + b * cos[i];
  }
}

}  // namespace dss::cpu
