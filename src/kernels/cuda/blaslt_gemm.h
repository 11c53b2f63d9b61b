// cuBLASLt GEMMs for the CUDA backend: y[T, N] = x[T, K] · W[N, K]^T with float32 accumulation and
// float32 output, for BF16 operands and for FP8 e4m3 operands with DeepSeek's block scales (weights
// per 128x128 block, activations per token and 128 columns). Host C++ only: cuBLASLt is a host API.
// The header has no CUDA types: every data pointer is DEVICE memory and `stream` is a cudaStream_t
// passed as void* (nullptr: the legacy default stream). All matrices are row-major.
//
// How our layouts map onto cuBLASLt's column-major GEMM (D[m, n] = op(A) op(B)):
//   m = N, n = T, k = K;  A = W (op T, lda = K), B = x (op N, ldb = K),
//   D = C = y viewed column-major [N, T] (ldd = N), which is y row-major [T, N].
// This is the "TN" form Hopper's FP8 kernels require.
//
// FP8 block scaling (cuBLAS >= 12.9, sm_90 only; evidence and sources in the .cc header):
//  - A (weights): CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, scales [ceil(N/128), L4] row-major,
//    L4 = round_up(ceil(K/128), 4): the checkpoint's [ceil(N/128), ceil(K/128)] grid with each row
//    padded to 4 floats (16 bytes). Identical when ceil(K/128) % 4 == 0, which holds for every
//    DeepSeek-V3 projection; otherwise repack once at load time with `blaslt_weight_scales`.
//  - B (activations): CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, scales [ceil(K/128), n] row-major
//    (token index contiguous), the transpose of our per-token [T, ceil(K/128)]. `gemm_fp8_block`
//    takes our layout and transposes it into a staging buffer (one cublasLtMatrixTransform).
//  - n must be a multiple of 8 when B is VEC128-scaled: a ragged T runs as one GEMM over the first
//    floor(T/8)*8 tokens straight from the caller's buffers plus one 8-token GEMM over the last
//    T % 8 tokens copied into padded staging buffers. T % 8 == 0 skips the copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"

namespace dss::cuda {

struct BlasLtConfig {
  // cuBLASLt's workspace (split-K and the like); NVIDIA advises 32 MiB on Hopper.
  size_t workspace_bytes = size_t{32} << 20;
  // Largest shapes `gemm_fp8_block` accepts; they size the staging buffers allocated at create.
  int64_t max_tokens = 16384;  // T
  int64_t max_rows = 131072;   // N (the vocabulary head is 129280)
  int64_t max_cols = 18432;    // K (the dense FFN's down projection)
};

// Owns one cuBLASLt handle, one device allocation (cuBLASLt workspace + FP8 staging) made at
// `create`, and a cache of matmul descriptors with their heuristic-chosen algorithm per
// (kind, T, N, K), so repeated shapes never re-run the heuristic. Nothing is allocated per call.
//
// Threading: one caller at a time (calls mutate cached descriptors and the staging buffers).
// Streams: work is enqueued on `stream` and not synchronised. Calls on different streams may race
// on the staging buffers; use one stream per BlasLt. Preconditions checked per call (a failed check
// returns an error, nothing is enqueued): N % 8 == 0, K % 8 == 0 (BF16) or K % 16 == 0 (FP8), every
// pointer 16-byte aligned.
class BlasLt {
 public:
  static Result<std::unique_ptr<BlasLt>> create(const BlasLtConfig& cfg = {});
  ~BlasLt();
  BlasLt(const BlasLt&) = delete;
  BlasLt& operator=(const BlasLt&) = delete;

  // y[n_tokens, n_rows] f32 = x[n_tokens, n_cols] bf16 · w[n_rows, n_cols]^T bf16 (raw bf16 bits).
  Status gemm_bf16(const uint16_t* w, const uint16_t* x, float* y, int64_t n_tokens, int64_t n_rows,
                   int64_t n_cols, void* stream);

  // y[t, r] f32 = sum_c (e4m3(x[t, c]) * x_scales[t, c/128]) * (e4m3(w[r, c]) * s_w[r/128, c/128])
  //   w        [n_rows, n_cols] e4m3 codes
  //   w_scales [ceil(n_rows/128), blaslt_weight_scale_cols(n_cols)] f32: s_w in cuBLASLt's grid
  //   x        [n_tokens, n_cols] e4m3 codes
  //   x_scales [n_tokens, ceil(n_cols/128)] f32, our per-token layout (transposed internally)
  // Needs sm_90 and cuBLASLt >= 12.9; n_tokens <= max_tokens, n_rows <= max_rows,
  // n_cols <= max_cols.
  Status gemm_fp8_block(const uint8_t* w, const float* w_scales, const uint8_t* x,
                        const float* x_scales, float* y, int64_t n_tokens, int64_t n_rows,
                        int64_t n_cols, void* stream);

  // Whether `gemm_fp8_block` can run here (sm_90 and cuBLASLt >= 12.9).
  bool fp8_block_supported() const;
  // Cached (kind, shape) plans; for tests.
  size_t n_plans() const;

  struct Impl;  // handle, device buffers, plan cache (blaslt_gemm.cc)

 private:
  explicit BlasLt(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Columns of cuBLASLt's BLK128x128 weight-scale grid: round_up(ceil(n_cols/128), 4).
int64_t blaslt_weight_scale_cols(int64_t n_cols);

// Repacks checkpoint block scales [ceil(n_rows/128), ceil(n_cols/128)] row-major into cuBLASLt's
// [ceil(n_rows/128), blaslt_weight_scale_cols(n_cols)] (padding columns 0). A plain copy when
// ceil(n_cols/128) % 4 == 0. Host memory; a load-time step.
std::vector<float> blaslt_weight_scales(std::span<const float> scales, int64_t n_rows,
                                        int64_t n_cols);

}  // namespace dss::cuda
