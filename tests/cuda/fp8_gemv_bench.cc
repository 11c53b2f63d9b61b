// FP8 block GEMV bandwidth on the GPU, as a fraction of a stated HBM peak (H200: 4.8 TB/s).
// Usage: cuda_fp8_gemv_bench [peak_GBps]. Shapes: DeepSeek-V3 projections at batch 1.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cuda/fp8_gemv.h"

int main(int argc, char** argv) {
  const double peak = argc > 1 ? std::atof(argv[1]) : 4800.0;
  if (!dss::cuda::device_present()) {
    std::printf("no CUDA device\n");
    return 0;
  }
  struct Shape {
    const char* name;
    int64_t rows, cols;
  };
  const Shape shapes[] = {{"q_b_proj 24576x1536", 24576, 1536},
                          {"o_proj 7168x16384", 7168, 16384},
                          {"dense up 18432x7168", 18432, 7168},
                          {"dense down 7168x18432", 7168, 18432},
                          {"expert up 2048x7168", 2048, 7168}};
  std::printf("%-24s %10s %10s %8s\n", "shape", "us/call", "GB/s", "of peak");
  for (const Shape& s : shapes) {
    std::vector<uint8_t> w(static_cast<size_t>(s.rows * s.cols), 0x38);  // 1.0 in e4m3
    std::vector<float> sc(static_cast<size_t>(((s.rows + 127) / 128) * ((s.cols + 127) / 128)),
                          1.0f);
    const dss::Matrix m{dss::DType::kF8E4M3, s.rows, s.cols, w.data(), sc.data()};
    auto t = dss::cuda::fp8_gemv_time(m, 200);
    if (!t.is_ok()) {
      std::printf("%s: %s\n", s.name, t.message().c_str());
      return 1;
    }
    std::printf("%-24s %10.2f %10.1f %7.1f%%\n", s.name, t->seconds_per_call * 1e6, t->gbytes_per_s,
                100.0 * t->gbytes_per_s / peak);
  }
  return 0;
}
