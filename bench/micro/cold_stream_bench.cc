// Batch-1 products on cold caches, one thread: what a decode step's small products (MLA's
// projections, W_UK^T / W_UV per head, one expert matrix) stream at when their weights come from
// DRAM, against the same product with its weights in cache and a contiguous read of as many bytes
// from its first row (W_UV's heads are strided in kv_b: there the read is not the same bytes).
// Each round flushes the caches (a 256 MiB read) before every cold measurement; cases and
// measurements alternate inside a round, so a slow spell of the shared VM lands on all of them.
// Prints medians over rounds in GB/s of weight bytes. Where the CPU has AVX512-BF16 every product
// runs in both tiled layouts (tensor/matrix.h kTiled and kTiledPairs, the same weights), in
// alternating order per round, and the table adds the pairs' cold time over kTiled's. Last, 10
// expert matrices one after another, each in its own buffer or back to back (the model's arena
// order, model/deepseek/weights.cc).
//   cold_stream_bench [--rounds N] [--tokens N]
// FP8 weights tiled on huge pages as the model holds them, 1 token (--tokens: 1-16; FP8 runs the
// GEMV below 5 tokens, the panel GEMM from 5; an expert at decode batch 16 sees ~2), the bf16-dot
// arithmetic where the CPU has AVX512-BF16 (as --matmul-dtype auto picks), else f32 (kTiled
// only).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/huge_buffer.h"
#include "base/rng.h"
#include "bench/micro/median.h"
#include "bench/micro/tiled_weights.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul.h"
#include "perf/read_bandwidth.h"
#include "tensor/dtype.h"

namespace dss {
namespace {

using Tiled = bench::TiledWeights;

using bench::median;

// n expert matrices (512 x 1024 FP8, tiled): each in its own buffer (`apart`), or copied back to
// back into `joint` (as the model's arena places an expert's gate, up and down).
struct Experts {
  std::vector<Tiled> apart;
  std::vector<Matrix> joint;
  HugeBuffer buf;
};
Experts make_experts(int n, Rng& rng) {
  Experts e;
  for (int i = 0; i < n; ++i)
    e.apart.push_back(bench::make_tiled_weights(DType::kF8E4M3, 512, 1024, rng));  // model layout
  const size_t bytes = e.apart[0].m.data_bytes();
  e.buf = HugeBuffer(bytes * static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    Matrix m = e.apart[static_cast<size_t>(i)].m;
    std::memcpy(e.buf.data() + bytes * static_cast<size_t>(i), m.data, bytes);
    m.data = e.buf.data() + bytes * static_cast<size_t>(i);
    e.joint.push_back(m);
  }
  return e;
}

// One case: `calls` products of rows [r0 + k * step, r1 + k * step) (a thread's share of
// ds-mini's product: half the rows, or 8 heads one call each).
struct Case {
  const char* name;
  int64_t rows, cols, r0, r1, calls, step;
};

int run(int argc, char** argv) {
  int32_t rounds = 21;
  int64_t n_tok = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    if (std::string(argv[i]) == "--tokens") n_tok = std::clamp(std::atoi(argv[i + 1]), 1, 16);
  }
  const std::vector<Case> cases = {
      {"q_a 384x1024, all rows", 384, 1024, 0, 384, 1, 0},
      {"q_b 1536x384, half", 1536, 384, 0, 768, 1, 0},
      {"o 1024x1024, half", 1024, 1024, 0, 512, 1, 0},
      {"W_UK^T 8 heads 256x64", 4096, 64, 0, 256, 8, 256},
      {"W_UV 8 heads 64x256", 2048, 256, 64, 128, 8, 128},
      {"expert gate 512x1024", 512, 1024, 0, 512, 1, 0},
  };
  Rng rng(1);
  // mats[layout][case]: layout 0 kTiled, 1 kTiledPairs (the same weights: the same Rng state).
  const int n_layouts = cpu::cpu_has_bf16_dot() ? 2 : 1;
  std::vector<Tiled> mats[2];
  for (const Case& c : cases) {
    Rng same = rng;
    mats[0].push_back(
        bench::make_tiled_weights(DType::kF8E4M3, c.rows, c.cols, same, WeightLayout::kTiled));
    if (n_layouts == 2) {
      mats[1].push_back(bench::make_tiled_weights(DType::kF8E4M3, c.rows, c.cols, rng,
                                                  WeightLayout::kTiledPairs));
    } else {
      rng = same;
    }
  }
  HugeBuffer flush(size_t{256} << 20);
  std::memset(flush.data(), 1, flush.size());  // real pages, not the shared zero page
  float sink = 0;
  auto flush_caches = [&] {
    sink += perf::read_sum(reinterpret_cast<const float*>(flush.data()),
                           static_cast<int64_t>(flush.size() / sizeof(float)));
  };
  std::vector<float> x(static_cast<size_t>(4096 * n_tok), 0.01f),
      y(static_cast<size_t>(8192 * n_tok));
  const size_t n = cases.size();
  std::vector<std::vector<double>> hot[2], cold[2], read(n);
  for (int l = 0; l < 2; ++l) hot[l].resize(n), cold[l].resize(n);
  for (int32_t r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < n; ++i) {
      const Case& c = cases[i];
      for (int k = 0; k < n_layouts; ++k) {
        const int l = (r + k) % n_layouts;  // alternate which layout goes first
        const Matrix& m = mats[l][i].m;
        auto call = [&] {
          for (int64_t q = 0; q < c.calls; ++q)
            cpu::matmul_rows(m, x.data(), n_tok, y.data(), c.r0 + q * c.step, c.r1 + q * c.step);
        };
        double t0 = 0, best = 1e9;
        for (int j = 0; j < 4; ++j) {  // the first brings the weights into cache
          t0 = now_seconds();
          call();
          if (j > 0) best = std::min(best, now_seconds() - t0);
        }
        hot[l][i].push_back(best);
        flush_caches();
        t0 = now_seconds();
        call();
        cold[l][i].push_back(now_seconds() - t0);
      }
      flush_caches();
      // The same number of bytes from the first call's rows on, as one sequential read.
      const int64_t bytes = (c.r1 - c.r0) * c.cols * c.calls;
      const auto* p = static_cast<const uint8_t*>(mats[0][i].m.data) + c.r0 * c.cols;
      const double t0 = now_seconds();
      sink += perf::read_sum(reinterpret_cast<const float*>(p), bytes / 4);
      read[i].push_back(now_seconds() - t0);
    }
  }
  std::printf("1 thread, %lld token(s), %d rounds, medians, GB/s of weight bytes (%s)\n",
              static_cast<long long>(n_tok), rounds, cpu::cpu_has_bf16_dot() ? "bf16 dot" : "f32");
  std::printf("  %-24s %6s %9s %9s %9s %9s %9s %10s\n", "product", "KiB", "cache T", "cache P",
              "cold T", "cold P", "read", "P/T cold");
  for (size_t i = 0; i < n; ++i) {
    const Case& c = cases[i];
    const double bytes = static_cast<double>((c.r1 - c.r0) * c.cols * c.calls);
    auto gbps = [&](const std::vector<double>& t) {
      return t.empty() ? 0.0 : bytes / median(t) * 1e-9;
    };
    const double cold_t = gbps(cold[0][i]), cold_p = gbps(cold[1][i]);
    std::printf("  %-24s %6.0f %9.1f %9.1f %9.1f %9.1f %9.1f %10.2f\n", c.name, bytes / 1024,
                gbps(hot[0][i]), gbps(hot[1][i]), cold_t, cold_p, gbps(read[i]), cold_p / cold_t);
  }
  std::printf("  (T: kTiled, P: kTiledPairs; P columns 0 where the CPU has no AVX512-BF16)\n");
  // 10 expert matrices one after another (a thread's share of a ds-mini MoE layer is ~10.5),
  // apart or back to back, alternating which goes first.
  const Experts ex = make_experts(10, rng);
  std::vector<double> t_apart_s, t_joint_s;
  for (int32_t r = 0; r < rounds; ++r) {
    for (int k = 0; k < 2; ++k) {
      const bool joint = (r + k) % 2 == 0;
      flush_caches();
      const double t0 = now_seconds();
      for (size_t i = 0; i < ex.joint.size(); ++i) {
        cpu::matmul_rows(joint ? ex.joint[i] : ex.apart[i].m, x.data(), n_tok, y.data(), 0, 512);
      }
      (joint ? t_joint_s : t_apart_s).push_back(now_seconds() - t0);
    }
  }
  const double ex_bytes = 10.0 * static_cast<double>(ex.apart[0].m.data_bytes());
  std::printf(
      "  10 expert matrices 512x1024, cold: each its own buffer %.1f GB/s, back to back %.1f "
      "GB/s\n",
      ex_bytes / median(t_apart_s) * 1e-9, ex_bytes / median(t_joint_s) * 1e-9);
  std::printf("(checksum %g)\n", static_cast<double>(sink));
  return 0;
}

}  // namespace
}  // namespace dss

int main(int argc, char** argv) { return dss::run(argc, argv); }
