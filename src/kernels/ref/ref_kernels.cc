#include "kernels/ref/ref_kernels.h"

#include <algorithm>
#include <cmath>

namespace dss::ref {

void matmul(const Matrix& w, const float* x, int64_t n_tok, float* y) {
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < w.n_rows; ++r) {
      double acc = 0.0;
      for (int64_t c = 0; c < w.n_cols; ++c)
        acc += static_cast<double>(w.at(r, c)) * x[t * w.n_cols + c];
      y[t * w.n_rows + r] = static_cast<float>(acc);
    }
  }
}

void rmsnorm(const float* x, const Vector& w, int64_t n, float eps, float* y) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv * w.at(i);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    y[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  const float m = *std::max_element(x, x + n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - m);
  for (int64_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(std::exp(static_cast<double>(x[i]) - m) / sum);
}

void rope_interleaved(float* x, int64_t d, const float* cos, const float* sin) {
  for (int64_t i = 0; i < d / 2; ++i) {
    const float a = x[2 * i], b = x[2 * i + 1];
    x[2 * i] = a * cos[i] - b * sin[i];
    x[2 * i + 1] = a * sin[i] + b * cos[i];
  }
}

double dot(const float* a, const float* b, int64_t n) {
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(a[i]) * b[i];
  return acc;
}

}  // namespace dss::ref
