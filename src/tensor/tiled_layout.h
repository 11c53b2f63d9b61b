// Repacking weights into the tiled layouts (tensor/matrix.h WeightLayout::kTiled, kTiledPairs) at
// load, for the CPU kernels: a tile of 32 rows is one contiguous stream, column by column (kTiled)
// or column pair by column pair (kTiledPairs, for the bf16-dot kernels), so the kernels hold rows
// in vector lanes (no horizontal sums, an outer-product GEMM) and a GEMV reads one sequential run
// per tile instead of 32 runs a row apart.
#pragma once

#include "tensor/matrix.h"
#include "tensor/quantize.h"

namespace dss {

// Whether m can be repacked into layout `to` (kTiled | kTiledPairs): m row-major and non-empty;
// kTiled: F8E4M3 | BF16 | I8 (the dtypes the kernels read tiled); kTiledPairs: F8E4M3 | BF16
// (what the bf16-dot kernels read) with an even n_cols.
bool can_tile(const Matrix& m, WeightLayout to = WeightLayout::kTiled);

// m's elements in layout `to` (padding rows zero), the same dtype and scales (copied):
// view().at(r, c) == m.at(r, c) for every element. Precondition: can_tile(m, to).
OwnedMatrix tile_matrix(const Matrix& m, WeightLayout to = WeightLayout::kTiled);

// Tiles [tile_begin, tile_end) of m in layout `to` (kTiled | kTiledPairs), written where they lie
// in the whole tiled matrix whose data starts at `dst` (Matrix::data_bytes of the tiled shape;
// the last tile's padding rows are zeroed): reads only m's rows [32 tile_begin, 32 tile_end), so
// disjoint tile ranges may be written by different threads (load_weights' parallel repack).
// Preconditions: can_tile(m, to); 0 <= tile_begin <= tile_end <= ceil(m.n_rows / 32).
void tile_rows_into(const Matrix& m, WeightLayout to, int64_t tile_begin, int64_t tile_end,
                    void* dst);

// Whether an owned kTiled matrix can become kTiledPairs in place (F8E4M3 | BF16, even n_cols).
bool can_pair_tiles(const OwnedMatrix& o);

// Permutes o's data from kTiled to kTiledPairs in place (a column pair at a time), so that
// view().at(r, c) is unchanged for every element. Precondition: can_pair_tiles(o).
void pair_tiles_in_place(OwnedMatrix& o);

}  // namespace dss
