#include "tensor/tiled_layout.h"

#include <cstring>
#include <vector>

#include "base/check.h"

namespace dss {

namespace {
bool pairable(DType dtype, int64_t n_cols) {
  return (dtype == DType::kF8E4M3 || dtype == DType::kBF16) && n_cols % 2 == 0;
}

// kTiled tiles of T [n_cols][32] in `data` to kTiledPairs [n_cols / 2][32][2] (tensor/matrix.h):
// a column pair occupies the same 64 elements in both layouts, so each pair is permuted alone.
template <typename T>
void pair_tiles(std::vector<uint8_t>& data, int64_t n_cols) {
  constexpr size_t kPairBytes = 2 * kTileRows * sizeof(T);
  DSS_CHECK(n_cols % 2 == 0 && data.size() % kPairBytes == 0, "pair_tiles: ", data.size(),
            " bytes, ", n_cols, " columns");
  T cols[2 * kTileRows];  // columns 2q and 2q + 1, kTiled order
  T pair[2 * kTileRows];
  for (size_t off = 0; off < data.size(); off += kPairBytes) {
    std::memcpy(cols, data.data() + off, kPairBytes);
    for (int64_t r = 0; r < kTileRows; ++r) {
      pair[2 * r] = cols[r];
      pair[2 * r + 1] = cols[kTileRows + r];
    }
    std::memcpy(data.data() + off, pair, kPairBytes);
  }
}
}  // namespace

bool can_tile(const Matrix& m, WeightLayout to) {
  const bool tileable =
      m.layout == WeightLayout::kRowMajor && m.n_cols > 0 && m.n_rows > 0 &&
      (m.dtype == DType::kF8E4M3 || m.dtype == DType::kBF16 || m.dtype == DType::kI8);
  if (to == WeightLayout::kTiled) return tileable;
  return to == WeightLayout::kTiledPairs && tileable && pairable(m.dtype, m.n_cols);
}

OwnedMatrix tile_matrix(const Matrix& m, WeightLayout to) {
  DSS_CHECK(can_tile(m, to), "tile_matrix: ", dtype_name(m.dtype), " [", m.n_rows, ", ", m.n_cols,
            "] cannot be tiled as layout ", static_cast<int>(to));
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
  if (to == WeightLayout::kTiledPairs) pair_tiles_in_place(o);
  return o;
}

bool can_pair_tiles(const OwnedMatrix& o) {
  return o.layout == WeightLayout::kTiled && pairable(o.dtype, o.n_cols);
}

void pair_tiles_in_place(OwnedMatrix& o) {
  DSS_CHECK(can_pair_tiles(o), "pair_tiles_in_place: ", dtype_name(o.dtype), " [", o.n_rows, ", ",
            o.n_cols, "] layout ", static_cast<int>(o.layout), " cannot be paired");
  if (o.dtype == DType::kF8E4M3) {
    pair_tiles<uint8_t>(o.data, o.n_cols);
  } else {
    pair_tiles<uint16_t>(o.data, o.n_cols);
  }
  o.layout = WeightLayout::kTiledPairs;
}

}  // namespace dss
