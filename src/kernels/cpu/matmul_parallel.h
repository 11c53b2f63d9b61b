// matmul (kernels/cpu/matmul.h) over a thread pool: how one product is cut into ranges the pool's
// threads claim. The split never changes a result: every kernel's (row, token) arithmetic is the
// same for any batch and row range (matmul_test's batch and row split checks).
#pragma once

#include <cstdint>
#include <span>

#include "base/thread_pool.h"
#include "tensor/matrix.h"

namespace dss::cpu {

// Products of at least kMatmulSplitTokens tokens (a prefill) are cut into chunks of
// kMatmulChunkRows rows x kMatmulChunkTokens tokens; fewer tokens (decode) into row ranges only:
// whole scale blocks from kMatmulBlockGrainTokens tokens where the matrix has at least
// kMatmulBlockGrainChunks blocks per thread (so the last claims still balance), else pairs of
// tiles from kMatmulBlockGrainTokens tokens where every thread gets one, else tiles.
inline constexpr int64_t kMatmulSplitTokens = 96;
inline constexpr int64_t kMatmulChunkTokens = 96;
inline constexpr int64_t kMatmulChunkRows = kFp8BlockSize;
inline constexpr int64_t kMatmulBlockGrainTokens = 5;
// Fewer than kMatmulBlockGrainTokens tokens (the GEMV paths: FP8 on AVX-512 takes the GEMM from 5
// tokens, AVX2 from 3, bf16-dot BF16 from 17) on matrices of fewer than kMatmulGuidedTiles tiles
// per thread: n_threads or 2 n_threads parts of equal tile counts (2 where each part keeps
// kMatmulMinPartTiles tiles, the f32 GEMV's 4 tiles side by side at 1 token; the bf16-dot GEMV
// runs 1-2 tokens one tile at a time since 969bee7, not re-measured here), claimed
// as any parallel_for chunk.
inline constexpr int64_t kMatmulGuidedTiles = 64;
inline constexpr int64_t kMatmulMinPartTiles = 4;
inline constexpr int64_t kMatmulBlockGrainChunks = 4;
// The row grain from kMatmulBlockGrainTokens tokens on a matrix too small for whole scale blocks
// (and at least this many rows per thread): two tiles, so the GEMM (FP8 from 5 tokens on
// AVX-512) decodes two-tile panels (4 weight loads per 4 x kG vdpbf16ps instead of 2 per 2 x kG)
// and converts the activations per two tiles, not per one (BM_Gemm_FP8_Expert_Bf16DotPairs/48, a
// 512-row matrix through matmul_parallel, 510-521 -> 627-629 GFLOP/s at 05c67c8 on a Zen 5 VM;
// docs/measurements.md#kmatmulgemmgrainrows). BF16 under the bf16-dot GEMV (to 16
// tokens) takes its tiles in GEMV runs of 1-2 tiles at 5-16 tokens (matmul_bf16-inl.h
// Bf16GemvRun), which the two-tile grain leaves whole.
inline constexpr int64_t kMatmulGemmGrainRows = 2 * kTileRows;

// y[n_tok, w.n_rows] = x[n_tok, w.n_cols] W^T on `pool` (called from the pool's owner thread).
//  - Few tokens: row ranges claimed guided, so a thread's rows are contiguous, at weight-tile grain
//    (tensor/matrix.h: a tile split between threads would be computed by both; two tiles,
//    kMatmulGemmGrainRows, from kMatmulBlockGrainTokens tokens) or, from
//    kMatmulBlockGrainTokens tokens on matrices of at least kMatmulBlockGrainChunks blocks per
//    thread, at scale-block grain (same reason as below; BM_Gemm_FP8_1024_Bf16Dot/16 447 ->
//    520-528 GFLOP/s).
//  - Many tokens: chunks of whole FP8 scale blocks (128 rows: the bf16-dot kernels compute a
//    block's bf16 activations once per call; ranges cut at tile grain by the guided claims redid
//    them per 32-row tile, 15% of a 512-token GEMM) x kMatmulChunkTokens tokens, token-chunk-major
//    so consecutive claims share the chunk's activations in cache.
//  - 1-4 tokens on a matrix of fewer than kMatmulGuidedTiles tiles per thread: equal parts (above).
void matmul_parallel(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tok, float* y);

// Independent products of n_tok tokens each (y_p = x_p W_p^T), as matmul_parallel does them one
// after the other, except that 1-4 token products whose tiles together stay under
// kMatmulGuidedTiles per thread run in one dispatch: the concatenated tiles in equal parts (one
// barrier, and longer streams than each product cut in its own parts).
struct MatmulProduct {
  const Matrix* w;
  const float* x;
  float* y;
};
void matmul_parallel(ThreadPool& pool, std::span<const MatmulProduct> products, int64_t n_tok);

}  // namespace dss::cpu
