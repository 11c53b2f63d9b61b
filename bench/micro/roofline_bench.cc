// Measures this machine's ceilings, the denominators of every speed claim (issue #7):
//   - read bandwidth (GB/s) streaming a buffer much larger than the caches, 1 thread and all
//     (src/perf/read_bandwidth.h, the same measurement `dsserve bench-model` makes);
//   - FP32 FMA peak (GFLOP/s) from independent register-resident FMA chains, 1 thread and all;
//   - BF16 dot peak (GFLOP/s): bf16 pairs multiply-accumulated into f32: vdpbf16ps where the CPU
//     has AVX512-BF16 (kernels/cpu/hwy_util-inl.h DotBf16Pairs, what MatmulArith::kBf16Dot runs),
//     else Highway's ReorderWidenMulAccumulate (widen + FMA; Highway 1.0.3 never emits the
//     native instruction). JSON "bf16_dot_native" says which.
// The peaks: src/perf/compute_peak.h (also what `dsserve bench-model` divides prefill by).
// Best of several repetitions (noisy VMs). Usage: roofline_bench [--json] [--mib N] [--threads N]
// The best Highway target this CPU supports is used (printed).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "hwy/targets.h"
#include "kernels/cpu/cpu_features.h"
#include "perf/compute_peak.h"
#include "perf/read_bandwidth.h"

int main(int argc, char** argv) {
  bool json = false;
  int64_t mib = 1024;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--mib" && i + 1 < argc) {
      mib = std::atoll(argv[++i]);
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: roofline_bench [--json] [--mib N] [--threads N]\n");
      return 2;
    }
  }
  using namespace dss::perf;
  const int64_t n_floats = mib * (1 << 20) / 4;
  auto buf = hwy::AllocateAligned<float>(static_cast<size_t>(n_floats));
  const double bw1 = read_gbps(buf.get(), n_floats, 1);
  const double bwn = read_gbps(buf.get(), n_floats, threads);
  const double f1 = measure_fma_gflops(1), fn = measure_fma_gflops(threads);
  const double b1 = measure_bf16_dot_gflops(1), bn = measure_bf16_dot_gflops(threads);
  // The dispatcher picks the best supported compiled target: the lowest set bit.
  const int64_t targets = hwy::SupportedTargets() & HWY_TARGETS;
  const char* target = hwy::TargetName(targets & (~targets + 1));
  const bool native = dss::cpu::cpu_has_bf16_dot();
  if (json) {
    std::printf(
        "{\"target\": \"%s\", \"threads\": %d, \"read_gbps_1t\": %.2f, \"read_gbps\": %.2f, "
        "\"fma_gflops_1t\": %.1f, \"fma_gflops\": %.1f, \"bf16_dot_gflops_1t\": %.1f, "
        "\"bf16_dot_gflops\": %.1f, \"bf16_dot_native\": %s}\n",
        target, threads, bw1, bwn, f1, fn, b1, bn, native ? "true" : "false");
  } else {
    std::printf("target %s, %d threads, %lld MiB buffer\n", target, threads,
                static_cast<long long>(mib));
    std::printf("%-28s %10s %10s\n", "", "1 thread", "all");
    std::printf("%-28s %10.1f %10.1f\n", "memory read, GB/s", bw1, bwn);
    std::printf("%-28s %10.1f %10.1f\n", "fp32 FMA, GFLOP/s", f1, fn);
    std::printf("%-28s %10.1f %10.1f\n",
                native ? "bf16 dot (vdpbf16ps), GFLOP/s" : "bf16 dot (widen-MAC), GFLOP/s", b1, bn);
  }
  return 0;
}
