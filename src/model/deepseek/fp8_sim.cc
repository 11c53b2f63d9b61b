#include "model/deepseek/fp8_sim.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "tensor/dtype.h"

namespace dss {

float act_quant_ue8m0(const float* x, int32_t n, float* q) {
  float amax = 0.0f;
  for (int32_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float s_raw = std::max(amax, 1e-4f) * (1.0f / 448.0f);
  int e = 0;
  const float m = std::frexp(s_raw, &e);  // s_raw = m * 2^e, m in [0.5, 1)
  const float s = m == 0.5f ? std::ldexp(1.0f, e - 1) : std::ldexp(1.0f, e);  // 2^ceil(log2 s_raw)
  for (int32_t i = 0; i < n; ++i) {
    const float v = std::clamp(x[i] / s, -kFp8E4M3Max, kFp8E4M3Max);
    q[i] = fp8e4m3_to_f32(f32_to_fp8e4m3(v));
  }
  return s;
}

void hadamard_transform(float* x, int32_t n) {
  DSS_CHECK(n > 0 && (n & (n - 1)) == 0, "hadamard size ", n, " is not a power of two");
  for (int32_t h = 1; h < n; h *= 2) {
    for (int32_t i = 0; i < n; i += 2 * h) {
      for (int32_t j = i; j < i + h; ++j) {
        const float a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(n));
  for (int32_t i = 0; i < n; ++i) x[i] *= scale;
}

void rope_rotate_half_split(float* x, int32_t n_pairs, const float* cos, const float* sin) {
  for (int32_t i = 0; i < n_pairs; ++i) {
    const float a = x[i], b = x[i + n_pairs];
    x[i] = a * cos[i] - b * sin[i];
    x[i + n_pairs] = a * sin[i] + b * cos[i];
  }
}

void layer_norm(const float* x, const float* w, const float* b, int32_t n, float eps, float* y) {
  double mean = 0.0;
  for (int32_t i = 0; i < n; ++i) mean += x[i];
  mean /= n;
  double var = 0.0;
  for (int32_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= n;
  const auto inv = static_cast<float>(1.0 / std::sqrt(var + eps));
  const auto mu = static_cast<float>(mean);
  for (int32_t i = 0; i < n; ++i) y[i] = (x[i] - mu) * inv * w[i] + b[i];
}

}  // namespace dss
