// First CUDA kernel (optional backend, -DDSS_CUDA=ON): FP8 e4m3 weights with 128x128 block scales
// times one activation vector, y[r] = sum_c W[r, c] * x[c], fp32 accumulation, the per-128-column
// partial sums multiplied by the block scale as DeepSeek's fp8_gemm does. The decode-time GEMV
// (batch 1) is bound by reading W once, so its figure of merit is GB/s against HBM peak.
// This header is plain C++ (no CUDA types) so host code and tests compile with the host compiler.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "tensor/matrix.h"

namespace dss::cuda {

// True when a CUDA device can be used (driver present, at least one device).
bool device_present();

// y[n_rows] = W x for an F8E4M3 `w` in host memory (copied to the device and back; for tests).
Status fp8_gemv_host(const Matrix& w, const float* x, float* y);

struct GemvTiming {
  double seconds_per_call = 0.0;
  double gbytes_per_s = 0.0;  // weight + scale + x + y bytes per call / time
};
// Times `iters` launches with W, x and y resident on the device (CUDA events, after a warm-up).
Result<GemvTiming> fp8_gemv_time(const Matrix& w, int iters);

}  // namespace dss::cuda
