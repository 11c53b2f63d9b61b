// CHECKs on CUDA runtime results for the CUDA backend's host code (a failed CUDA call in the
// forward pass is an invariant broken: out of device memory after start-up, a kernel fault).
#pragma once

#include <cuda_runtime.h>

#include "base/check.h"

namespace dss {

template <typename... Args>
void cuda_check(cudaError_t e, const Args&... what) {
  DSS_CHECK(e == cudaSuccess, what..., ": ", cudaGetErrorString(e));
}

// A kernels/cuda launcher's result (nullptr or a static error string).
inline void cuda_launch_check(const char* err, const char* what) {
  DSS_CHECK(err == nullptr, what, ": ", err);
}

}  // namespace dss

// A kernels/cuda launcher call, CHECKed, its text in the message.
#define DSS_DEV(call) ::dss::cuda_launch_check((call), #call)
