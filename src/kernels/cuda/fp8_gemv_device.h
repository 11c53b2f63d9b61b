// Device side of kernels/cuda/fp8_gemv.h, compiled by nvcc. Plain types only (no project headers:
// the project's C++20 headers stay with the host compiler). Every function returns nullptr on
// success or a static CUDA error string.
#pragma once

#include <cstdint>

namespace dss::cuda::dev {

struct Fp8GemvBuffers {     // device pointers
  uint8_t* w = nullptr;     // [n_rows, n_cols] e4m3
  float* scales = nullptr;  // [ceil(n_rows/128), ceil(n_cols/128)]
  float* x = nullptr;       // [n_cols]
  float* y = nullptr;       // [n_rows]
  int64_t n_rows = 0, n_cols = 0;
};

bool device_present();
// Allocates and copies (x may be null: zeros). On error everything allocated is freed.
const char* fp8_gemv_upload(Fp8GemvBuffers& b, const uint8_t* w, const float* scales,
                            const float* x);
void fp8_gemv_free(Fp8GemvBuffers& b);
const char* fp8_gemv_run(const Fp8GemvBuffers& b);  // one launch, synchronised
const char* fp8_gemv_download_y(const Fp8GemvBuffers& b, float* y);
// Mean milliseconds per launch over `iters` launches after 3 warm-up launches (CUDA events).
const char* fp8_gemv_time_ms(const Fp8GemvBuffers& b, int iters, double* ms_per_call);

}  // namespace dss::cuda::dev
