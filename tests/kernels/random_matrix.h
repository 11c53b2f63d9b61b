// Random weight matrices for the matmul tests (matmul_test, matmul_parallel_test): every dtype the
// kernels take, FP8 with every code but NaN (subnormals included) and block scales over 12
// binades, I8 with per-row scales, row-major (tile them with tensor/tiled_layout.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "tensor/dtype.h"
#include "tensor/matrix.h"

namespace dss::test {

struct RandomMatrix {
  Matrix m;
  std::vector<uint8_t> data;
  std::vector<float> scales;
};
inline RandomMatrix random_matrix(DType dt, int64_t rows, int64_t cols, Rng& rng) {
  RandomMatrix r;
  r.m = Matrix{dt, rows, cols, nullptr, nullptr};
  r.data.resize(static_cast<size_t>(rows * cols) * dtype_size(dt));
  for (int64_t i = 0; i < rows * cols; ++i) {
    const float v = rng.normal();
    if (dt == DType::kF32) std::memcpy(r.data.data() + 4 * i, &v, 4);
    if (dt == DType::kBF16) {
      const uint16_t b = f32_to_bf16(v);
      std::memcpy(r.data.data() + 2 * i, &b, 2);
    }
    if (dt == DType::kF16) {
      const uint16_t b = f32_to_f16(v);
      std::memcpy(r.data.data() + 2 * i, &b, 2);
    }
    if (dt == DType::kF8E4M3) {  // every code but NaN, incl. subnormals
      uint8_t code = static_cast<uint8_t>(rng.next_u64());
      if ((code & 0x7F) == 0x7F) code = 0x3F;
      r.data[static_cast<size_t>(i)] = code;
    }
    if (dt == DType::kI8) {  // symmetric range [-127, 127] as the INT8 format writes it
      r.data[static_cast<size_t>(i)] =
          static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(rng.next_u64() % 255) - 127));
    }
  }
  r.m.data = r.data.data();
  if (dt == DType::kF8E4M3) {
    r.scales.resize(static_cast<size_t>(r.m.n_scale_rows() * r.m.n_scale_cols()));
    for (auto& s : r.scales)
      s = std::exp2(static_cast<float>(static_cast<int>(rng.next_u64() % 12) - 14)) *
          (1.0f + rng.uniform());
    r.m.scales = r.scales.data();
  }
  if (dt == DType::kI8) {  // per-row scales spanning several binades
    r.scales.resize(static_cast<size_t>(rows));
    for (auto& s : r.scales)
      s = std::exp2(static_cast<float>(static_cast<int>(rng.next_u64() % 8) - 10)) *
          (1.0f + rng.uniform());
    r.m.scales = r.scales.data();
  }
  return r;
}

}  // namespace dss::test
