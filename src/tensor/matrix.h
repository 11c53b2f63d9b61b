// Non-owning views of checkpoint tensors as the kernels consume them.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace dss {

inline constexpr int64_t kFp8BlockSize = 128;  // weight_block_size [128, 128]

// How a matrix's elements are ordered in memory.
//   kRowMajor  [n_rows, n_cols]: the checkpoint's order (memory-mapped, zero copy).
//   kTiled     rows in tiles of kTileRows (the last tile zero-padded to full height), each tile
//              column-major [n_cols][kTileRows]: element (r, c) at
//              (r / 32) * 32 * n_cols + c * 32 + r % 32. A column of a tile is one contiguous
//              run, so the CPU kernels keep rows in vector lanes (a dot product is never split
//              over lanes) and a tile is one sequential stream (tensor/tiled_layout.h repacks at
//              load). Tile t starts at element t * 32 * n_cols, as row 32t does in row-major
//              order; 32 rows are inside one 128-row FP8 scale block.
//   kTiledPairs  (FP8 | BF16 with an even n_cols, for MatmulArith::kBf16Dot only) kTiled's tiles,
//              each stored as n_cols / 2 column pairs of 64 elements, the pair's two columns
//              interleaved per row: element (r, c) at
//              (r / 32) * 32 * n_cols + (c / 2) * 64 + 2 * (r % 32) + c % 2. A pair is thus in
//              the order vdpbf16ps reads (rows in lanes, the two columns in a lane's two words),
//              so the bf16-dot kernels skip the interleave per pair
//              (kernels/cpu/matmul_bf16-inl.h). Tiles and pairs start where they do in kTiled.
enum class WeightLayout : uint8_t { kRowMajor, kTiled, kTiledPairs };
inline constexpr int64_t kTileRows = 32;

// The arithmetic the CPU kernels use for a matrix (kernels/cpu/matmul.h states both exactly).
//   kF32      x in float32, weights exact, float32 FMAs: DeepSeek's float32 reference arithmetic.
//   kBf16Dot  tiled FP8 / BF16 only, on CPUs with AVX512-BF16: x (times the FP8 block scale)
//             rounded to bf16, as DeepSeek's own bf16 inference rounds activations, and multiplied
//             by vdpbf16ps (32 products per instruction; e4m3 subnormal codes count as zero).
enum class MatmulArith : uint8_t { kF32, kBf16Dot };

// A 2-D weight [n_rows, n_cols] (`layout`: row-major or tiled, above), in one of
// F32 | BF16 | F16 | F8E4M3 | I8.
// For F8E4M3, `scales` is [ceil(n_rows/128), ceil(n_cols/128)] float32 multipliers
// (`weight_scale_inv`): W[r, c] = fp8(data[r, c]) * scales[r/128, c/128]; edge blocks are ragged.
// For I8 (per-output-channel INT8, docs/quantization.md), `scales` is [n_rows] float32
// (`weight_scale`): W[r, c] = int8(data[r, c]) * scales[r].
struct Matrix {
  DType dtype = DType::kF32;
  int64_t n_rows = 0;
  int64_t n_cols = 0;
  const void* data = nullptr;
  const float* scales = nullptr;                  // F8E4M3 (block grid) and I8 (per row) only
  WeightLayout layout = WeightLayout::kRowMajor;  // scales are always row-major
  MatmulArith arith = MatmulArith::kF32;

  int64_t n_scale_cols() const { return (n_cols + kFp8BlockSize - 1) / kFp8BlockSize; }
  int64_t n_scale_rows() const { return (n_rows + kFp8BlockSize - 1) / kFp8BlockSize; }
  bool empty() const { return data == nullptr; }
  // Element (r, c) as float32, exactly as the reference dequantises it. Slow: for tests, refs.
  float at(int64_t r, int64_t c) const;
  // The sub-matrix of rows [row_begin, row_begin + n): shares data and the scale grid.
  // NOTE: for FP8 `row_begin` must be a multiple of 128 so the scale rows stay aligned; for a
  // tiled matrix a multiple of kTileRows. For I8 the per-row scales are sliced with the rows.
  Matrix rows(int64_t row_begin, int64_t n) const;
  // Index of element (r, c) in `data` (elements, not bytes).
  int64_t element_index(int64_t r, int64_t c) const {
    if (layout == WeightLayout::kRowMajor) return r * n_cols + c;
    const int64_t tile = (r / kTileRows) * kTileRows * n_cols;
    if (layout == WeightLayout::kTiled) return tile + c * kTileRows + r % kTileRows;
    return tile + (c / 2) * 2 * kTileRows + 2 * (r % kTileRows) + c % 2;
  }
  // Rows as stored: n_rows, or rounded up to whole tiles.
  int64_t stored_rows() const {
    return layout == WeightLayout::kRowMajor ? n_rows
                                             : (n_rows + kTileRows - 1) / kTileRows * kTileRows;
  }
  size_t data_bytes() const {
    return static_cast<size_t>(stored_rows() * n_cols) * dtype_size(dtype);
  }
};

// A 1-D vector of F32 | BF16 | F16 values (norm weights, biases).
struct Vector {
  DType dtype = DType::kF32;
  int64_t n = 0;
  const void* data = nullptr;
  float at(int64_t i) const;
};

// Reads element i of a buffer of dtype t as float32 (F32, BF16, F16, F8E4M3, I8 (the integer)).
float load_as_f32(DType t, const void* data, int64_t i);

}  // namespace dss
