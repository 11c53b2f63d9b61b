// Repacking weights into the tiled layout (tensor/matrix.h WeightLayout::kTiled) at load, for
// the CPU kernels: a GEMV tile of 8 rows then streams one contiguous run of memory (one hardware
// prefetch stream per thread) instead of 8 runs 8 rows apart.
#pragma once

#include "tensor/matrix.h"
#include "tensor/quantize.h"

namespace dss {

// Whether m can be tiled: row-major, F8E4M3 | BF16 | I8 (the dtypes the kernels read tiled),
// n_cols a positive multiple of kTileCols.
bool can_tile(const Matrix& m);

// m's elements in the tiled layout (padding rows zero), the same dtype and scales (copied):
// view().at(r, c) == m.at(r, c) for every element. Precondition: can_tile(m).
OwnedMatrix tile_matrix(const Matrix& m);

}  // namespace dss
