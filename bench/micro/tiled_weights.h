// A checkpoint-like weight matrix as the model holds it for the micro-benchmarks
// (stream_ratio_bench, cold_stream_bench): tiled (tensor/tiled_layout.h) on huge pages
// (base/huge_buffer.h), FP8 with block scales of 1e-3, the bf16-dot arithmetic where the CPU has
// AVX512-BF16 (as --matmul-dtype auto picks), else f32; in the layout the model gives it
// (model_layout) unless the caller names one.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "base/huge_buffer.h"
#include "base/rng.h"
#include "bench/micro/checkpoint_like.h"
#include "kernels/cpu/cpu_features.h"
#include "tensor/dtype.h"
#include "tensor/matrix.h"
#include "tensor/tiled_layout.h"

namespace dss::bench {

// `m` views `buf` (the tiles) and `scales` (FP8: [ceil(rows/128), ceil(cols/128)]); moving a
// TiledWeights keeps both pointers valid.
struct TiledWeights {
  Matrix m;
  HugeBuffer buf;
  std::vector<float> scales;
};

// What place_weights (model/deepseek/weight_placement.h) gives a tiled projection under the
// bf16-dot arithmetic: kTiledPairs where tile_matrix can pair it, else kTiled.
inline WeightLayout model_layout(DType dt, int64_t rows, int64_t cols) {
  return cpu::cpu_has_bf16_dot() && can_tile(Matrix{dt, rows, cols}, WeightLayout::kTiledPairs)
             ? WeightLayout::kTiledPairs
             : WeightLayout::kTiled;
}

// `layout`: kTiled, or kTiledPairs (only where the CPU has AVX512-BF16: no other arithmetic reads
// it).
inline TiledWeights make_tiled_weights(DType dt, int64_t rows, int64_t cols, Rng& rng,
                                       WeightLayout layout) {
  std::vector<uint8_t> data = checkpoint_like_weights(dt, rows, cols, rng);
  TiledWeights t;
  Matrix m{dt, rows, cols, data.data(), nullptr};
  std::vector<float> row_major_scales;
  if (dt == DType::kF8E4M3) {
    row_major_scales.assign(static_cast<size_t>(m.n_scale_rows() * m.n_scale_cols()), 1e-3f);
    m.scales = row_major_scales.data();
  }
  const OwnedMatrix owned = tile_matrix(m, layout);
  t.m = owned.view();
  t.scales = owned.scales;  // the view's scales die with `owned`
  t.m.scales = dt == DType::kF8E4M3 ? t.scales.data() : nullptr;
  t.buf = HugeBuffer(t.m.data_bytes());
  std::memcpy(t.buf.data(), t.m.data, t.m.data_bytes());
  t.m.data = t.buf.data();
  if (cpu::cpu_has_bf16_dot()) t.m.arith = MatmulArith::kBf16Dot;
  return t;
}
inline TiledWeights make_tiled_weights(DType dt, int64_t rows, int64_t cols, Rng& rng) {
  return make_tiled_weights(dt, rows, cols, rng, model_layout(dt, rows, cols));
}

}  // namespace dss::bench
