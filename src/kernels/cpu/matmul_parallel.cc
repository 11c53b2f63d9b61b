#include "kernels/cpu/matmul_parallel.h"

#include <algorithm>

#include "kernels/cpu/matmul.h"

namespace dss::cpu {

void matmul_parallel(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tok, float* y) {
  if (n_tok < kMatmulSplitTokens) {
    const bool blocks = n_tok >= kMatmulBlockGrainTokens &&
                        w.n_rows >= kMatmulBlockGrainChunks * kFp8BlockSize * pool.n_threads();
    pool.parallel_for(
        w.n_rows, blocks ? kFp8BlockSize : kTileRows,
        [&](int64_t r0, int64_t r1, int32_t) { matmul_rows(w, x, n_tok, y, r0, r1); });
    return;
  }
  const int64_t n_rb = (w.n_rows + kMatmulChunkRows - 1) / kMatmulChunkRows;
  const int64_t n_tb = (n_tok + kMatmulChunkTokens - 1) / kMatmulChunkTokens;
  pool.parallel_for(n_rb * n_tb, 1, [&](int64_t i0, int64_t i1, int32_t) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t0 = i / n_rb * kMatmulChunkTokens, r0 = i % n_rb * kMatmulChunkRows;
      matmul_rows(w, x + t0 * w.n_cols, std::min(kMatmulChunkTokens, n_tok - t0), y + t0 * w.n_rows,
                  r0, std::min(r0 + kMatmulChunkRows, w.n_rows));
    }
  });
}

}  // namespace dss::cpu
