#include "tensor/tiled_layout.h"

#include <algorithm>
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

// Tiles [t0, t1) of the row-major src [n_rows, n_cols] of T into dst (the whole tiled matrix):
// kTiled puts (r, c) of a tile at c * 32 + r, kTiledPairs at (c / 2) * 64 + 2 r + c % 2
// (tensor/matrix.h). src is read through memcpy: a mapped tensor need not be aligned to T.
template <typename T>
void tile_range(const uint8_t* src, int64_t n_rows, int64_t n_cols, bool pairs, int64_t t0,
                int64_t t1, T* dst) {
  for (int64_t t = t0; t < t1; ++t) {
    T* tile = dst + t * kTileRows * n_cols;
    const int64_t r0 = t * kTileRows, nr = std::min(kTileRows, n_rows - r0);
    if (nr < kTileRows) std::memset(tile, 0, static_cast<size_t>(kTileRows * n_cols) * sizeof(T));
    for (int64_t r = 0; r < nr; ++r) {
      const uint8_t* row = src + static_cast<size_t>((r0 + r) * n_cols) * sizeof(T);
      T* out = tile + (pairs ? 2 * r : r);
      const int64_t stride = pairs ? 2 * kTileRows : kTileRows;  // column (pair) c -> c + 1
      const int64_t n_words = pairs ? n_cols / 2 : n_cols;
      for (int64_t c = 0; c < n_words; ++c) {
        if (pairs) {
          std::memcpy(out + c * stride, row + static_cast<size_t>(2 * c) * sizeof(T),
                      2 * sizeof(T));
        } else {
          std::memcpy(out + c * stride, row + static_cast<size_t>(c) * sizeof(T), sizeof(T));
        }
      }
    }
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
  o.layout = to;
  o.data.resize(o.view().data_bytes());
  tile_rows_into(m, to, 0, (m.n_rows + kTileRows - 1) / kTileRows, o.data.data());
  if (m.dtype == DType::kF8E4M3)
    o.scales.assign(m.scales, m.scales + m.n_scale_rows() * m.n_scale_cols());
  if (m.dtype == DType::kI8) o.scales.assign(m.scales, m.scales + m.n_rows);
  return o;
}

void tile_rows_into(const Matrix& m, WeightLayout to, int64_t tile_begin, int64_t tile_end,
                    void* dst) {
  DSS_CHECK(can_tile(m, to), "tile_rows_into: ", dtype_name(m.dtype), " [", m.n_rows, ", ",
            m.n_cols, "] cannot be tiled as layout ", static_cast<int>(to));
  DSS_CHECK(0 <= tile_begin && tile_begin <= tile_end &&
                tile_end <= (m.n_rows + kTileRows - 1) / kTileRows,
            "tile_rows_into: tiles [", tile_begin, ", ", tile_end, ") of ", m.n_rows, " rows");
  const bool pairs = to == WeightLayout::kTiledPairs;
  if (dtype_size(m.dtype) == 1) {
    tile_range<uint8_t>(static_cast<const uint8_t*>(m.data), m.n_rows, m.n_cols, pairs, tile_begin,
                        tile_end, static_cast<uint8_t*>(dst));
  } else {
    tile_range<uint16_t>(static_cast<const uint8_t*>(m.data), m.n_rows, m.n_cols, pairs, tile_begin,
                         tile_end, static_cast<uint16_t*>(dst));
  }
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
