// The FP8 steps of DeepSeek-V3.2's reference numerics, simulated in float32 exactly as the
// official model.py does them (docs/deepseek-reference.md 2.9 and implementer's notes 10-13).
#pragma once

#include <cstdint>

namespace dss::cpu {

// act_quant with UE8M0 scales over one block x[0, n): s = 2^ceil(log2(max(amax, 1e-4) * (1/448))),
// q = e4m3(clamp(x / s, -448, 448)) (round to nearest even). Writes the e4m3 values (as f32,
// exact) to q and returns s. q may alias x.
float act_quant_ue8m0(const float* x, int32_t n, float* q);

// In-place fast Walsh-Hadamard transform (Sylvester order) of x[0, n), n a power of two,
// scaled by n^-0.5 (fast_hadamard_transform with scale = n^-0.5).
void hadamard_transform(float* x, int32_t n);

// LayerNorm with weight and bias, in float32: (x - mean) / sqrt(var + eps) * w + b. y may alias x.
void layer_norm(const float* x, const float* w, const float* b, int32_t n, float eps, float* y);

}  // namespace dss::cpu
