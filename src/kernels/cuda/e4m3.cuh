// e4m3 conversions on the device, for the kernels/cuda sources (nvcc only; no project types).
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

namespace dss::cuda::dev {

// The value of an e4m3 code (subnormals included; 0x7F / 0xFF are NaN and never stored).
__device__ inline float e4m3_value(uint8_t b) {
  __nv_fp8_e4m3 v;
  v.__x = b;
  return static_cast<float>(v);
}

// The nearest e4m3 code, ties to even, saturating at +-448 (the reference clamps to +-448 first).
__device__ inline uint8_t e4m3_code(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

}  // namespace dss::cuda::dev
