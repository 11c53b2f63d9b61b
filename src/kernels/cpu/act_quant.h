// W8A8 FP8 activation quantisation (DeepSeek's act_quant, DeepGEMM's per-token-per-128 scheme):
// every row of x, per 128-column block (the last one may be shorter), is quantised to e4m3 and
// dequantised again, so the following f32 matmul computes with exactly the values an FP8 GEMM
// would see: y = e4m3(clamp(x / s, -448, 448)) * s with
//   s = max(amax, 1e-4) / 448                               (scale_fmt absent), or
//   s = 2^ceil(log2(max(amax, 1e-4) * fp32(1/448)))           (scale_fmt ue8m0),
// e4m3 rounding to nearest even, subnormals down to 2^-9 (docs/deepseek-reference.md notes 11).
// The 1e-4 floor is the reference's fix for all-zero blocks (PR #968).
// x, y: [n_tok, n_cols] f32 row-major; y may alias x. Runtime dispatch; tested against
// kernels/ref bit for bit on every target.
#pragma once

#include <cstdint>

namespace dss::cpu {

void act_quant_fp8(const float* x, int64_t n_tok, int64_t n_cols, bool ue8m0, float* y);

}  // namespace dss::cpu
