// Weight x activation products with weights in their checkpoint dtype, dequantised in registers
// (no full-matrix dequantisation): y[t, r] = sum_c W[r, c] * x[t, c].
//
// W: F32 | BF16 | F16 | F8E4M3 with 128x128 block scales | I8 with per-row scales
// (tensor/matrix.h). x: [n_tok, W.n_cols] f32, y: [n_tok, W.n_rows] f32 (row stride W.n_rows), fp32
// accumulation. For FP8 the per-block partial sums are multiplied by the block scale, as DeepSeek's
// fp8_gemm does; for I8 the dot product of the integer weights is multiplied by the row scale.
// Runtime dispatch picks the best Highway target; every target is tested against kernels/ref.
#pragma once

#include <cstdint>

#include "tensor/matrix.h"

namespace dss::cpu {

void matmul(const Matrix& w, const float* x, int64_t n_tok, float* y);
// Only rows [r_begin, r_end) of y are written (so callers can split the work across threads).
void matmul_rows(const Matrix& w, const float* x, int64_t n_tok, float* y, int64_t r_begin,
                 int64_t r_end);

}  // namespace dss::cpu
