#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "kernels/cuda/e4m3.cuh"
#include "kernels/cuda/fp8_gemv_device.h"

namespace dss::cuda::dev {
namespace {

constexpr int kWarpsPerBlock = 8;

// One warp per weight row. Aligned path (n_cols % 16 == 0): each lane reads 16 weight bytes at a
// time (one 16-byte load; 16 divides 128, so the chunk lies inside one scale block) and scales its
// chunk's partial sum; warp-shuffle reduction at the end. Ragged path: one byte per lane.
__global__ void fp8_gemv_kernel(const uint8_t* __restrict__ w, const float* __restrict__ scales,
                                int64_t n_rows, int64_t n_cols, const float* __restrict__ x,
                                float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= n_rows) return;
  const int64_t n_scale_cols = (n_cols + 127) / 128;
  const float* srow = scales + (r / 128) * n_scale_cols;
  const uint8_t* wr = w + r * n_cols;
  float acc = 0.0f;
  if (n_cols % 16 == 0) {
    for (int64_t c = static_cast<int64_t>(lane) * 16; c < n_cols; c += 32 * 16) {
      const uint4 q = *reinterpret_cast<const uint4*>(wr + c);
      const uint8_t* b = reinterpret_cast<const uint8_t*>(&q);
      const float4* xv = reinterpret_cast<const float4*>(x + c);
      float part = 0.0f;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float4 xx = xv[k];
        part += e4m3_value(b[4 * k + 0]) * xx.x + e4m3_value(b[4 * k + 1]) * xx.y +
                e4m3_value(b[4 * k + 2]) * xx.z + e4m3_value(b[4 * k + 3]) * xx.w;
      }
      acc += part * srow[c / 128];
    }
  } else {
    for (int64_t c = lane; c < n_cols; c += 32) acc += e4m3_value(wr[c]) * srow[c / 128] * x[c];
  }
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (lane == 0) y[r] = acc;
}

const char* err(cudaError_t e) { return e == cudaSuccess ? nullptr : cudaGetErrorString(e); }

void launch(const Fp8GemvBuffers& b) {
  const auto blocks = static_cast<unsigned>((b.n_rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  fp8_gemv_kernel<<<blocks, kWarpsPerBlock * 32>>>(b.w, b.scales, b.n_rows, b.n_cols, b.x, b.y);
}

}  // namespace

bool device_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

void fp8_gemv_free(Fp8GemvBuffers& b) {
  cudaFree(b.w);
  cudaFree(b.scales);
  cudaFree(b.x);
  cudaFree(b.y);
  b.w = nullptr;
  b.scales = nullptr;
  b.x = b.y = nullptr;
}

const char* fp8_gemv_upload(Fp8GemvBuffers& b, const uint8_t* w, const float* scales,
                            const float* x) {
  const size_t wb = static_cast<size_t>(b.n_rows * b.n_cols);
  const size_t sb =
      static_cast<size_t>(((b.n_rows + 127) / 128) * ((b.n_cols + 127) / 128)) * sizeof(float);
  const size_t xb = static_cast<size_t>(b.n_cols) * sizeof(float);
  const size_t yb = static_cast<size_t>(b.n_rows) * sizeof(float);
  const char* e = err(cudaMalloc(&b.w, wb));
  if (!e) e = err(cudaMalloc(&b.scales, sb));
  if (!e) e = err(cudaMalloc(&b.x, xb));
  if (!e) e = err(cudaMalloc(&b.y, yb));
  if (!e) e = err(cudaMemcpy(b.w, w, wb, cudaMemcpyHostToDevice));
  if (!e) e = err(cudaMemcpy(b.scales, scales, sb, cudaMemcpyHostToDevice));
  if (!e) e = err(x ? cudaMemcpy(b.x, x, xb, cudaMemcpyHostToDevice) : cudaMemset(b.x, 0, xb));
  if (e) fp8_gemv_free(b);
  return e;
}

const char* fp8_gemv_run(const Fp8GemvBuffers& b) {
  launch(b);
  const char* e = err(cudaGetLastError());
  return e ? e : err(cudaDeviceSynchronize());
}

const char* fp8_gemv_download_y(const Fp8GemvBuffers& b, float* y) {
  return err(
      cudaMemcpy(y, b.y, static_cast<size_t>(b.n_rows) * sizeof(float), cudaMemcpyDeviceToHost));
}

const char* fp8_gemv_time_ms(const Fp8GemvBuffers& b, int iters, double* ms_per_call) {
  for (int i = 0; i < 3; ++i) launch(b);
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  cudaEventRecord(t0);
  for (int i = 0; i < iters; ++i) launch(b);
  cudaEventRecord(t1);
  cudaEventSynchronize(t1);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, t0, t1);
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  *ms_per_call = static_cast<double>(ms) / iters;
  return err(cudaGetLastError());
}

}  // namespace dss::cuda::dev
