#include "tensor/matrix.h"

#include "base/check.h"

namespace dss {

float load_as_f32(DType t, const void* data, int64_t i) {
  switch (t) {
    case DType::kF32:
      return static_cast<const float*>(data)[i];
    case DType::kBF16:
      return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::kF16:
      return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::kF8E4M3:
      return fp8e4m3_to_f32(static_cast<const uint8_t*>(data)[i]);
    case DType::kI8:
      return static_cast<float>(static_cast<const int8_t*>(data)[i]);
    default:
      DSS_CHECK(false, "unsupported dtype ", dtype_name(t));
  }
  return 0.0f;
}

float Matrix::at(int64_t r, int64_t c) const {
  const float v = load_as_f32(dtype, data, element_index(r, c));
  if (dtype == DType::kI8) return v * scales[r];
  if (dtype != DType::kF8E4M3) return v;
  return v * scales[(r / kFp8BlockSize) * n_scale_cols() + c / kFp8BlockSize];
}

Matrix Matrix::rows(int64_t row_begin, int64_t n) const {
  DSS_CHECK(row_begin >= 0 && n >= 0 && row_begin + n <= n_rows, row_begin, "+", n, " > ", n_rows);
  DSS_CHECK(layout == WeightLayout::kRowMajor || row_begin % kTileRows == 0,
            "tiled row slice must be tile aligned: ", row_begin);
  Matrix m = *this;
  m.n_rows = n;
  m.data = static_cast<const uint8_t*>(data) +
           static_cast<size_t>(row_begin * n_cols) * dtype_size(dtype);
  if (dtype == DType::kF8E4M3) {
    DSS_CHECK(row_begin % kFp8BlockSize == 0, "fp8 row slice must be block aligned: ", row_begin);
    m.scales = scales + (row_begin / kFp8BlockSize) * n_scale_cols();
  }
  if (dtype == DType::kI8) m.scales = scales + row_begin;
  return m;
}

float Vector::at(int64_t i) const { return load_as_f32(dtype, data, i); }

}  // namespace dss
