#include "tensor/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"

namespace dss {

namespace {
// Smallest power of two >= x (x > 0), exactly.
float pow2_ceil(float x) {
  int e = 0;
  const float m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  return m == 0.5f ? std::ldexp(1.0f, e - 1) : std::ldexp(1.0f, e);
}
}  // namespace

void quantize_fp8_block_rows(const float* w, int64_t n_rows, int64_t n_cols, bool ue8m0,
                             uint8_t* codes, float* scales) {
  const int64_t B = kFp8BlockSize;
  const int64_t br = (n_rows + B - 1) / B, bc = (n_cols + B - 1) / B;
  for (int64_t bi = 0; bi < br; ++bi) {
    const int64_t r0 = bi * B, r1 = std::min(n_rows, r0 + B);
    for (int64_t bj = 0; bj < bc; ++bj) {
      const int64_t c0 = bj * B, c1 = std::min(n_cols, c0 + B);
      float amax = 0.0f;
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(w[r * n_cols + c]));
      }
      float s = amax > 0.0f ? amax / kFp8E4M3Max : 1.0f;
      if (ue8m0) s = pow2_ceil(s);
      scales[bi * bc + bj] = s;
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c)
          codes[r * n_cols + c] = f32_to_fp8e4m3(w[r * n_cols + c] / s);
      }
    }
  }
}

void quantize_int8_rows(const float* w, int64_t n_rows, int64_t n_cols, int8_t* q, float* scales) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* row = w + r * n_cols;
    float amax = 0.0f;
    for (int64_t c = 0; c < n_cols; ++c) amax = std::max(amax, std::fabs(row[c]));
    const float s = amax > 0.0f ? amax / 127.0f : 1.0f;
    scales[r] = s;
    for (int64_t c = 0; c < n_cols; ++c) {
      const float v = std::clamp(std::nearbyint(row[c] / s), -127.0f, 127.0f);  // ties to even
      q[r * n_cols + c] = static_cast<int8_t>(v);
    }
  }
}

void dequantize_rows(const Matrix& m, int64_t row_begin, int64_t n, float* out) {
  DSS_CHECK(row_begin >= 0 && n >= 0 && row_begin + n <= m.n_rows);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < m.n_cols; ++c) out[r * m.n_cols + c] = m.at(row_begin + r, c);
  }
}

Matrix OwnedMatrix::view() const {
  return Matrix{dtype, n_rows, n_cols, data.data(), scales.empty() ? nullptr : scales.data(),
                layout};
}

OwnedMatrix convert_matrix(const Matrix& m, DType to, bool ue8m0) {
  DSS_CHECK(to == DType::kBF16 || to == DType::kF8E4M3 || to == DType::kI8 || to == DType::kF32,
            "cannot convert to ", dtype_name(to));
  OwnedMatrix o;
  o.dtype = to;
  o.n_rows = m.n_rows;
  o.n_cols = m.n_cols;
  o.data.resize(static_cast<size_t>(m.n_rows * m.n_cols) * dtype_size(to));
  DSS_CHECK(m.layout == WeightLayout::kRowMajor, "convert_matrix: the input must be row-major");
  if (m.dtype == to) {  // unchanged: same codes, same scales
    std::memcpy(o.data.data(), m.data, o.data.size());
    if (to == DType::kF8E4M3)
      o.scales.assign(m.scales, m.scales + m.n_scale_rows() * m.n_scale_cols());
    if (to == DType::kI8) o.scales.assign(m.scales, m.scales + m.n_rows);
    return o;
  }
  if (to == DType::kF8E4M3)
    o.scales.resize(static_cast<size_t>(m.n_scale_rows() * m.n_scale_cols()));
  if (to == DType::kI8) o.scales.resize(static_cast<size_t>(m.n_rows));
  const int64_t B = kFp8BlockSize, C = m.n_cols;
  std::vector<float> slab(static_cast<size_t>(std::min(B, m.n_rows) * C));
  for (int64_t r0 = 0; r0 < m.n_rows; r0 += B) {
    const int64_t n = std::min(B, m.n_rows - r0);
    dequantize_rows(m, r0, n, slab.data());
    uint8_t* dst = o.data.data() + static_cast<size_t>(r0 * C) * dtype_size(to);
    switch (to) {
      case DType::kBF16:
        for (int64_t i = 0; i < n * C; ++i) {
          const uint16_t b = f32_to_bf16(slab[static_cast<size_t>(i)]);
          std::memcpy(dst + 2 * i, &b, 2);
        }
        break;
      case DType::kF32:
        std::memcpy(dst, slab.data(), static_cast<size_t>(n * C) * 4);
        break;
      case DType::kF8E4M3:
        quantize_fp8_block_rows(slab.data(), n, C, ue8m0, dst,
                                o.scales.data() + (r0 / B) * m.n_scale_cols());
        break;
      case DType::kI8:
        quantize_int8_rows(slab.data(), n, C, reinterpret_cast<int8_t*>(dst), o.scales.data() + r0);
        break;
      default:
        break;
    }
  }
  return o;
}

}  // namespace dss
