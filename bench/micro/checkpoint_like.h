// Weight codes as a checkpoint has them, for the matmul benchmarks (matmul_bench,
// stream_ratio_bench): FP8 of normal weights quantised at amax ~ 4.5 sigma (e4m3 subnormals
// ~0.01%, as in ds-mini: the decode's speed depends on it), BF16 of normal values, other dtypes
// finite random bytes. Row-major [rows, cols]; FP8 block scales are the caller's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/rng.h"
#include "tensor/dtype.h"

namespace dss::bench {

inline std::vector<uint8_t> checkpoint_like_weights(DType dt, int64_t rows, int64_t cols,
                                                    Rng& rng) {
  std::vector<uint8_t> data(static_cast<size_t>(rows * cols) * dtype_size(dt));
  if (dt == DType::kF8E4M3) {
    for (auto& b : data) b = f32_to_fp8e4m3(std::clamp(rng.normal() * 99.5f, -448.0f, 448.0f));
  } else if (dt == DType::kBF16) {
    auto* p = reinterpret_cast<uint16_t*>(data.data());
    for (int64_t i = 0; i < rows * cols; ++i) p[i] = f32_to_bf16(rng.normal() * 0.02f);
  } else {
    for (auto& b : data) b = static_cast<uint8_t>(rng.next_u64() & 0x77);  // finite
  }
  return data;
}

}  // namespace dss::bench
