// Weight format conversions shared by `dsserve convert` and `--weight-dtype`
// (docs/quantization.md): FP8 e4m3 with 128x128 block scales, per-output-channel INT8, BF16, all
// from and to the Matrix contract of tensor/matrix.h. Scalar code: load-time and offline only,
// never on the hot path.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/matrix.h"

namespace dss {

// FP8 block quantisation of w [n_rows, n_cols] (f32): per 128x128 block (edge blocks ragged),
// s = amax / 448 (ue8m0: the smallest power of two >= amax / 448; s = 1 for an all-zero block),
// code = e4m3(w / s) rounded to nearest even (saturating). codes [n_rows, n_cols],
// scales [ceil(n_rows/128), ceil(n_cols/128)]. Callers may stream 128-row slabs (the blocks of
// a slab starting at a multiple of 128 are the matrix's blocks).
void quantize_fp8_block_rows(const float* w, int64_t n_rows, int64_t n_cols, bool ue8m0,
                             uint8_t* codes, float* scales);

// Per-output-channel symmetric INT8: s_r = amax_r / 127 (1 for an all-zero row),
// q = clamp(round_half_even(w / s_r), -127, 127). q [n_rows, n_cols], scales [n_rows].
void quantize_int8_rows(const float* w, int64_t n_rows, int64_t n_cols, int8_t* q, float* scales);

// Rows [row_begin, row_begin + n) of m dequantised to f32 exactly as Matrix::at (one f32
// product of code and scale). out: [n, m.n_cols].
void dequantize_rows(const Matrix& m, int64_t row_begin, int64_t n, float* out);

// An owned matrix produced by a conversion; view() is valid while this object lives.
struct OwnedMatrix {
  DType dtype = DType::kF32;
  int64_t n_rows = 0, n_cols = 0;
  std::vector<uint8_t> data;
  std::vector<float> scales;  // F8E4M3: block grid; I8: per row; else empty
  WeightLayout layout = WeightLayout::kRowMajor;
  Matrix view() const;
  size_t bytes() const { return data.size() + scales.size() * sizeof(float); }
};

// Converts m to `to` (BF16 | F8E4M3 | I8 | F32), 128 rows at a time (memory: the output plus a
// 128-row f32 slab). BF16 output is round-to-nearest-even of the f32 dequantised value, which is
// what DeepSeek's fp8_cast_bf16.py (weight_dequant) produces. `ue8m0` applies to F8E4M3 output.
// A matrix already in `to` is copied unchanged (no requantisation). Input and output are
// row-major (convert first, then tile: tensor/tiled_layout.h).
OwnedMatrix convert_matrix(const Matrix& m, DType to, bool ue8m0);

}  // namespace dss
