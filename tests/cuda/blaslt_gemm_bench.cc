// cuBLASLt GEMM throughput at DeepSeek-V3 (671B) projection shapes with T = 4096 tokens (prefill),
// FP8 with 128x128 / 1x128 block scales and BF16, as a fraction of a stated dense peak.
// Usage: cuda_blaslt_gemm_bench [peak_fp8_tflops] [peak_bf16_tflops]
//   Defaults are H100/H200 SXM dense (no sparsity): FP8 1979, BF16 989 TFLOP/s (NVIDIA lists 3958
//   and 1979 "with sparsity"; the H200 has the H100's compute).
// Prints one JSON line per (kind, shape): {"kind","name","T","N","K","ms","tflops","peak_tflops",
// "fraction"}; {"skipped":"no CUDA device"} without a GPU. Exit 0 unless a GEMM failed.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/cuda/blaslt_gemm.h"
#include "kernels/cuda/fp8_gemv.h"

namespace {

constexpr int64_t kTokens = 4096;
constexpr int kWarmup = 3, kIters = 20;

struct Shape {
  const char* name;
  int64_t n_rows, n_cols;  // W [N, K]
};
constexpr Shape kShapes[] = {{"q_b_proj", 24576, 1536},
                             {"kv_b_proj", 32768, 512},
                             {"o_proj", 7168, 16384},
                             {"expert_gate_up", 2048, 7168},
                             {"expert_down", 7168, 2048}};

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Mean milliseconds per call of `run` over kIters calls after kWarmup (the first builds the plan).
template <typename F>
dss::Result<double> time_ms(F run) {
  for (int i = 0; i < kWarmup; ++i) DSS_RETURN_IF_ERROR(run());
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  cudaEventRecord(t0);
  for (int i = 0; i < kIters; ++i) DSS_RETURN_IF_ERROR(run());
  cudaEventRecord(t1);
  cudaEventSynchronize(t1);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, t0, t1);
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return dss::Status::error("CUDA: ", cudaGetErrorString(e));
  return static_cast<double>(ms) / kIters;
}

void* device_alloc(size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) return nullptr;
  cudaMemset(p, 0x3F, bytes);  // finite everywhere: e4m3 1.875, bf16 ~0.75, f32 ~0.75
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const double peak_fp8 = argc > 1 ? std::atof(argv[1]) : 1979.0;
  const double peak_bf16 = argc > 2 ? std::atof(argv[2]) : 989.0;
  if (!dss::cuda::device_present()) {
    std::printf("{\"skipped\":\"no CUDA device\"}\n");
    return 0;
  }
  int64_t max_n = 0, max_k = 0, max_nk = 0, max_sw = 0;
  for (const Shape& s : kShapes) {
    max_n = std::max(max_n, s.n_rows);
    max_k = std::max(max_k, s.n_cols);
    max_nk = std::max(max_nk, s.n_rows * s.n_cols);
    max_sw =
        std::max(max_sw, (s.n_rows + 127) / 128 * dss::cuda::blaslt_weight_scale_cols(s.n_cols));
  }
  dss::cuda::BlasLtConfig cfg;
  cfg.max_tokens = kTokens;
  cfg.max_rows = max_n;
  cfg.max_cols = max_k;
  auto lt = dss::cuda::BlasLt::create(cfg);
  if (!lt.is_ok()) {
    std::printf("{\"error\":\"%s\"}\n", json_escape(lt.message()).c_str());
    return 1;
  }
  const auto tk = static_cast<size_t>(kTokens * max_k);
  auto* w = static_cast<uint8_t*>(device_alloc(static_cast<size_t>(max_nk) * 2));  // bf16 size
  auto* x = static_cast<uint8_t*>(device_alloc(tk * 2));
  auto* y = static_cast<float*>(device_alloc(static_cast<size_t>(kTokens * max_n) * 4));
  auto* sw = static_cast<float*>(device_alloc(static_cast<size_t>(max_sw) * 4));
  auto* sx = static_cast<float*>(device_alloc(tk / 128 * 4));
  if (!w || !x || !y || !sw || !sx) {
    std::printf("{\"error\":\"cudaMalloc failed\"}\n");
    return 1;
  }
  int rc = 0;
  for (const bool fp8 : {true, false}) {
    const char* kind = fp8 ? "fp8_block" : "bf16";
    if (fp8 && !(*lt)->fp8_block_supported()) {
      std::printf("{\"kind\":\"%s\",\"skipped\":\"needs sm_90 and cuBLASLt >= 12.9\"}\n", kind);
      continue;
    }
    const double peak = fp8 ? peak_fp8 : peak_bf16;
    for (const Shape& s : kShapes) {
      dss::cuda::BlasLt& b = **lt;
      auto run = [&]() -> dss::Status {
        if (fp8) return b.gemm_fp8_block(w, sw, x, sx, y, kTokens, s.n_rows, s.n_cols, nullptr);
        return b.gemm_bf16(reinterpret_cast<const uint16_t*>(w),
                           reinterpret_cast<const uint16_t*>(x), y, kTokens, s.n_rows, s.n_cols,
                           nullptr);
      };
      const auto ms = time_ms(run);
      if (!ms.is_ok()) {
        std::printf("{\"kind\":\"%s\",\"name\":\"%s\",\"error\":\"%s\"}\n", kind, s.name,
                    json_escape(ms.message()).c_str());
        rc = 1;
        continue;
      }
      const double tflops = 2.0 * kTokens * s.n_rows * s.n_cols / (*ms * 1e-3) * 1e-12;
      std::printf(
          "{\"kind\":\"%s\",\"name\":\"%s\",\"T\":%lld,\"N\":%lld,\"K\":%lld,\"ms\":%.4f,"
          "\"tflops\":%.1f,\"peak_tflops\":%.1f,\"fraction\":%.3f}\n",
          kind, s.name, static_cast<long long>(kTokens), static_cast<long long>(s.n_rows),
          static_cast<long long>(s.n_cols), *ms, tflops, peak, tflops / peak);
    }
  }
  cudaFree(w);
  cudaFree(x);
  cudaFree(y);
  cudaFree(sw);
  cudaFree(sx);
  return rc;
}
