#include "kernels/cpu/matmul_parallel.h"

#include <algorithm>

#include "kernels/cpu/matmul.h"

namespace dss::cpu {

namespace {

int64_t tiles_of(const Matrix& w) { return (w.n_rows + kTileRows - 1) / kTileRows; }

// The products' tiles, concatenated, in n_threads * k equal parts (k = 2 where each part keeps
// kMatmulMinPartTiles tiles; n_tiles: their total); each part runs its tiles of each product in
// order.
void equal_parts(ThreadPool& pool, std::span<const MatmulProduct> products, int64_t n_tiles,
                 int64_t n_tok) {
  const int64_t n_threads = pool.n_threads();
  const int64_t n_parts = n_threads * (n_tiles >= 2 * kMatmulMinPartTiles * n_threads ? 2 : 1);
  pool.parallel_for(n_parts, 1, [&](int64_t i0, int64_t i1, int32_t) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t g0 = n_tiles * i / n_parts, g1 = n_tiles * (i + 1) / n_parts;
      int64_t base = 0;  // the first global tile of product p
      for (const MatmulProduct& p : products) {
        const int64_t t0 = std::max(g0 - base, int64_t{0});
        const int64_t t1 = std::min(g1 - base, tiles_of(*p.w));
        if (t0 < t1) {
          matmul_rows(*p.w, p.x, n_tok, p.y, t0 * kTileRows, std::min(t1 * kTileRows, p.w->n_rows));
        }
        base += tiles_of(*p.w);
      }
    }
  });
}

bool equal_parts_fit(ThreadPool& pool, int64_t n_tiles, int64_t n_tok) {
  return n_tok < kMatmulBlockGrainTokens && n_tiles < kMatmulGuidedTiles * pool.n_threads();
}

}  // namespace

void matmul_parallel(ThreadPool& pool, std::span<const MatmulProduct> products, int64_t n_tok) {
  int64_t n_tiles = 0;
  for (const MatmulProduct& p : products) n_tiles += tiles_of(*p.w);
  if (equal_parts_fit(pool, n_tiles, n_tok)) return equal_parts(pool, products, n_tiles, n_tok);
  for (const MatmulProduct& p : products) matmul_parallel(pool, *p.w, p.x, n_tok, p.y);
}

void matmul_parallel(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tok, float* y) {
  if (equal_parts_fit(pool, tiles_of(w), n_tok)) {
    const MatmulProduct p{&w, x, y};
    return equal_parts(pool, std::span<const MatmulProduct>(&p, 1), tiles_of(w), n_tok);
  }
  if (n_tok < kMatmulSplitTokens) {
    const bool many = n_tok >= kMatmulBlockGrainTokens;
    const bool blocks =
        many && w.n_rows >= kMatmulBlockGrainChunks * kFp8BlockSize * pool.n_threads();
    const bool pairs = many && w.n_rows >= kMatmulGemmGrainRows * pool.n_threads();
    const int64_t grain = blocks ? kFp8BlockSize : (pairs ? kMatmulGemmGrainRows : kTileRows);
    pool.parallel_for(w.n_rows, grain, [&](int64_t r0, int64_t r1, int32_t) {
      matmul_rows(w, x, n_tok, y, r0, r1);
    });
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
