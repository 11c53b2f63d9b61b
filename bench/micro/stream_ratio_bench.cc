// Batch-1 GEMV streaming rate as a fraction of the machine's read bandwidth, measured in turns in
// one process (the dev VM's bandwidth moves by +-25% within minutes, so separate runs of a read
// benchmark and a GEMV benchmark cannot be compared). Each round: a pure read of a 256 MiB buffer
// on the pool's threads (perf::read_sum), each case, the read again; a case's ratio is its GB/s
// over the faster of the round's two reads. Prints the median over rounds.
//   stream_ratio_bench [--rounds N] [--threads N]
// Cases (ds-mini's shapes, weights tiled on huge pages as the model holds them, 1 token):
//   lm_head    129280 x 1024 BF16 (bf16-dot where the CPU has AVX512-BF16), cpu::matmul_parallel;
//   experts    126 FP8 512 x 1024 matrices (a decode step's worth of expert matrices), one
//              cpu::matmul_parallel each, as the model's small products run;
//   experts, whole per thread   the same matrices, each thread whole matrices in one dispatch
//              (what the split could reach).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/huge_buffer.h"
#include "base/rng.h"
#include "base/thread_pool.h"
#include "bench/micro/median.h"
#include "bench/micro/tiled_weights.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_parallel.h"
#include "perf/read_bandwidth.h"
#include "tensor/dtype.h"

namespace dss {
namespace {

using Tiled = bench::TiledWeights;

using bench::median;

int run(int argc, char** argv) {
  int32_t rounds = 15, threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--threads") threads = std::max(1, std::atoi(argv[i + 1]));
  }
  ThreadPool pool(threads);
  Rng rng(1);
  const Tiled lm = bench::make_tiled_weights(DType::kBF16, 129280, 1024, rng);
  std::vector<Tiled> ex;
  for (int i = 0; i < 126; ++i)
    ex.push_back(bench::make_tiled_weights(DType::kF8E4M3, 512, 1024, rng));
  double ex_bytes = 0;
  for (const Tiled& e : ex) ex_bytes += static_cast<double>(e.m.data_bytes());
  const int64_t n_read = int64_t{256} << 18;  // floats: 256 MiB
  HugeBuffer rd(static_cast<size_t>(n_read) * sizeof(float));
  // Written once, so the reads touch real pages (an untouched mapping reads the shared zero page).
  std::memset(rd.data(), 1, rd.size());
  const auto* rp = reinterpret_cast<const float*>(rd.data());
  std::vector<float> x(1024, 0.01f), y(129280);
  std::vector<std::vector<float>> y_thread(static_cast<size_t>(threads), std::vector<float>(1024));
  std::vector<float> sums(static_cast<size_t>(threads));  // keeps the reads observable
  auto read_s = [&] {
    const double t0 = now_seconds();
    const int64_t per = n_read / threads / 64 * 64;
    pool.parallel_for(threads, 1, [&](int64_t i0, int64_t i1, int32_t it) {
      for (int64_t i = i0; i < i1; ++i)
        sums[static_cast<size_t>(it)] += perf::read_sum(rp + i * per, per);
    });
    return now_seconds() - t0;
  };
  std::vector<double> bw, r_lm, r_ex, r_whole;
  for (int32_t r = 0; r < rounds; ++r) {
    const double s0 = read_s();
    double t = now_seconds();
    cpu::matmul_parallel(pool, lm.m, x.data(), 1, y.data());
    const double s_lm = now_seconds() - t;
    t = now_seconds();
    for (const Tiled& e : ex) cpu::matmul_parallel(pool, e.m, x.data(), 1, y.data());
    const double s_ex = now_seconds() - t;
    t = now_seconds();
    pool.parallel_for(static_cast<int64_t>(ex.size()), 1, [&](int64_t i0, int64_t i1, int32_t it) {
      for (int64_t i = i0; i < i1; ++i) {
        cpu::matmul_rows(ex[static_cast<size_t>(i)].m, x.data(), 1,
                         y_thread[static_cast<size_t>(it)].data(), 0, 512);
      }
    });
    const double s_whole = now_seconds() - t;
    const double gbps = static_cast<double>(n_read) * 4 / std::min(s0, read_s()) * 1e-9;
    bw.push_back(gbps);
    r_lm.push_back(static_cast<double>(lm.m.data_bytes()) / s_lm * 1e-9 / gbps);
    r_ex.push_back(ex_bytes / s_ex * 1e-9 / gbps);
    r_whole.push_back(ex_bytes / s_whole * 1e-9 / gbps);
  }
  float total = 0;
  for (float v : sums) total += v;
  std::printf("%d threads, %d rounds, medians: read %.1f GB/s (checksum %g)\n", threads, rounds,
              median(bw), static_cast<double>(total));
  std::printf("  lm_head BF16 129280x1024        %.3f of read\n", median(r_lm));
  std::printf("  experts FP8 512x1024, each own  %.3f of read\n", median(r_ex));
  std::printf("  experts, whole per thread       %.3f of read\n", median(r_whole));
  return 0;
}

}  // namespace
}  // namespace dss

int main(int argc, char** argv) { return dss::run(argc, argv); }
