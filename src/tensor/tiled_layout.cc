#include "tensor/tiled_layout.h"

#include <cstring>

#include "base/check.h"

namespace dss {

bool can_tile(const Matrix& m) {
  return m.layout == WeightLayout::kRowMajor && m.n_cols > 0 && m.n_rows > 0 &&
         (m.dtype == DType::kF8E4M3 || m.dtype == DType::kBF16 || m.dtype == DType::kI8);
}

OwnedMatrix tile_matrix(const Matrix& m) {
  DSS_CHECK(can_tile(m), "tile_matrix: ", dtype_name(m.dtype), " [", m.n_rows, ", ", m.n_cols,
            "] cannot be tiled");
  OwnedMatrix o;
  o.dtype = m.dtype;
  o.n_rows = m.n_rows;
  o.n_cols = m.n_cols;
  o.layout = WeightLayout::kTiled;
  const Matrix shape = o.view();  // element_index / data_bytes of the tiled layout
  o.data.assign(shape.data_bytes(), 0);
  const size_t es = dtype_size(m.dtype);
  const auto* src = static_cast<const uint8_t*>(m.data);
  for (int64_t r = 0; r < m.n_rows; ++r) {
    const uint8_t* row = src + static_cast<size_t>(r * m.n_cols) * es;
    uint8_t* dst = o.data.data() + static_cast<size_t>(shape.element_index(r, 0)) * es;
    const size_t stride = static_cast<size_t>(kTileRows) * es;  // column c -> c + 1
    for (int64_t c = 0; c < m.n_cols; ++c)
      std::memcpy(dst + static_cast<size_t>(c) * stride, row + static_cast<size_t>(c) * es, es);
  }
  if (m.dtype == DType::kF8E4M3)
    o.scales.assign(m.scales, m.scales + m.n_scale_rows() * m.n_scale_cols());
  if (m.dtype == DType::kI8) o.scales.assign(m.scales, m.scales + m.n_rows);
  return o;
}

}  // namespace dss
