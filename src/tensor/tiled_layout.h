// Repacking weights into the tiled layout (tensor/matrix.h WeightLayout::kTiled) at load, for
// the CPU kernels: a tile of 32 rows is one contiguous stream, column by column, so the kernels
// hold rows in vector lanes (no horizontal sums, an outer-product GEMM) and a GEMV reads one
// sequential run per tile instead of 32 runs a row apart.
#pragma once

#include "tensor/matrix.h"
#include "tensor/quantize.h"

namespace dss {

// Whether m can be tiled: row-major, non-empty, F8E4M3 | BF16 | I8 (the dtypes the kernels read
// tiled).
bool can_tile(const Matrix& m);

// m's elements in the tiled layout (padding rows zero), the same dtype and scales (copied):
// view().at(r, c) == m.at(r, c) for every element. Precondition: can_tile(m).
OwnedMatrix tile_matrix(const Matrix& m);

}  // namespace dss
