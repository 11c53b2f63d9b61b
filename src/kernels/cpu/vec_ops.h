// Vector primitives of the forward pass (Highway, runtime dispatch; tested on every target
// against kernels/ref). All arrays f32 unless a Vector (norm weight in its checkpoint dtype).
#pragma once

#include <cstdint>

#include "tensor/matrix.h"

namespace dss::cpu {

float dot(const float* a, const float* b, int64_t n);
// y[i] += a * x[i]
void axpy(float a, const float* x, float* y, int64_t n);
// y = x / sqrt(mean(x^2) + eps) * w; y may alias x.
void rmsnorm(const float* x, const Vector& w, int64_t n, float eps, float* y);
// y = silu(gate) * up; y may alias gate or up.
void silu_mul(const float* gate, const float* up, int64_t n, float* y);
// In-place softmax of x[0, n).
void softmax(float* x, int64_t n);

}  // namespace dss::cpu
