#include "kernels/cpu/matmul_parallel.h"

#include <algorithm>

#include "kernels/cpu/matmul.h"

namespace dss::cpu {

void matmul_parallel(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tok, float* y) {
  const int64_t n_tiles = (w.n_rows + kTileRows - 1) / kTileRows;
  const int64_t n_threads = pool.n_threads();
  if (n_tok < kMatmulBlockGrainTokens && n_tiles < kMatmulGuidedTiles * n_threads) {
    // n_threads * k parts of equal tile counts, k = 2 where each part keeps >= 4 tiles.
    const int64_t k = n_tiles >= 2 * kMatmulMinPartTiles * n_threads ? 2 : 1;
    const int64_t n_parts = n_threads * k;
    pool.parallel_for(n_parts, 1, [&](int64_t i0, int64_t i1, int32_t) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t r0 = n_tiles * i / n_parts * kTileRows;
        const int64_t r1 = std::min(w.n_rows, n_tiles * (i + 1) / n_parts * kTileRows);
        if (r0 < r1) matmul_rows(w, x, n_tok, y, r0, r1);
      }
    });
    return;
  }
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
