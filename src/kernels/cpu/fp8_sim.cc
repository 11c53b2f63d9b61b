#include "kernels/cpu/fp8_sim.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "tensor/dtype.h"
#include "tensor/ue8m0_quant.h"

namespace dss::cpu {

namespace {
constexpr int32_t kMaxQuantBlock = 512;  // callers quantise blocks of 128 (latent) or D <= 256
}  // namespace

float act_quant_ue8m0(const float* x, int32_t n, float* q) {
  uint8_t codes[kMaxQuantBlock];
  DSS_CHECK(n <= kMaxQuantBlock, "act_quant block of ", n);
  const float s = quant_block_ue8m0(x, n, codes);
  for (int32_t i = 0; i < n; ++i) q[i] = fp8e4m3_to_f32(codes[i]);
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

}  // namespace dss::cpu
