// Weight x activation products (kernels/cpu/matmul.h) on ds-mini-sized shapes, split over all
// hardware threads by output rows the way CpuBackend::linear does.
//   GEMV (1 token): weight-read bound; counter GB/s = weight + scale bytes per second. Compare
//     with roofline_bench's all-thread read bandwidth (the matrices are larger than the L3).
//   GEMM (prefill): compute bound; counter GFLOP/s = 2 * rows * cols * tokens per second. Compare
//     with roofline_bench's FMA / BF16-dot peak.
// The weights sit on transparent huge pages (base/huge_buffer.h), as the model's arena holds them:
// on 4 KiB pages (until 2026-12-02) BM_LmHead_BF16_Bf16DotPairs/16 read 5.5-20.8 GB/s in two runs
// against 25.8-29.1 on huge pages, alternating, and lm_head's ~28 in the model at batch 16.
// Run: build/release/bench/micro/matmul_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "base/huge_buffer.h"
#include "base/rng.h"
#include "base/thread_pool.h"
#include "bench/micro/checkpoint_like.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_parallel.h"
#include "tensor/dtype.h"
#include "tensor/tiled_layout.h"

namespace dss {
namespace {

struct Weights {
  Matrix m;        // data in `buf`
  HugeBuffer buf;  // the row-major or tiled elements
  std::vector<float> scales;
  OwnedMatrix tiled;  // tile_matrix(m, layout) when the benchmark reads a tiled layout (its
                      // scales are the ones m uses)
};

// `pairs`: the bf16-dot twin in WeightLayout::kTiledPairs (what the model loads for bf16-dot).
Weights make(DType dt, int64_t rows, int64_t cols, bool tiled = false, bool bf16_dot = false,
             bool pairs = false) {
  Rng rng(3);
  Weights w;
  const std::vector<uint8_t> data = bench::checkpoint_like_weights(dt, rows, cols, rng);
  w.m = Matrix{dt, rows, cols, data.data(), nullptr};
  if (dt == DType::kF8E4M3) {
    w.scales.assign(static_cast<size_t>(w.m.n_scale_rows() * w.m.n_scale_cols()), 1e-3f);
    w.m.scales = w.scales.data();
  }
  if (tiled) {
    w.tiled = tile_matrix(w.m, pairs ? WeightLayout::kTiledPairs : WeightLayout::kTiled);
    w.m = w.tiled.view();
    if (bf16_dot) w.m.arith = MatmulArith::kBf16Dot;
  }
  w.buf = HugeBuffer(w.m.data_bytes());
  std::memcpy(w.buf.data(), w.m.data, w.m.data_bytes());
  w.m.data = w.buf.data();
  std::vector<uint8_t>().swap(w.tiled.data);  // the copy in `buf` is the one read
  return w;
}

ThreadPool& pool() {
  static ThreadPool p(static_cast<int32_t>(std::thread::hardware_concurrency()));
  return p;
}

void run(benchmark::State& bs, DType dt, int64_t rows, int64_t cols, int64_t n_tok,
         bool tiled = false, bool bf16_dot = false, bool pairs = false) {
  if (bf16_dot && !cpu::cpu_has_bf16_dot()) {
    bs.SkipWithError("MatmulArith::kBf16Dot needs AVX512-BF16");
    return;
  }
  const Weights w = make(dt, rows, cols, tiled, bf16_dot, pairs);
  std::vector<float> x(static_cast<size_t>(n_tok * cols), 0.01f),
      y(static_cast<size_t>(n_tok * rows));
  for (auto _ : bs) {
    cpu::matmul_parallel(pool(), w.m, x.data(), n_tok, y.data());  // as the model splits it
    benchmark::DoNotOptimize(y.data());
  }
  const double bytes = static_cast<double>(w.m.data_bytes() + w.scales.size() * 4);
  const double flop = 2.0 * static_cast<double>(rows * cols * n_tok);
  bs.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  bs.counters["GFLOP/s"] =
      benchmark::Counter(flop * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  bs.counters["threads"] = pool().n_threads();
}

// 64 MiB of FP8 / 128 MiB of BF16: far beyond the caches, like a decode step's weights.
void BM_Gemv_FP8(benchmark::State& bs) { run(bs, DType::kF8E4M3, 16384, 4096, bs.range(0)); }
void BM_Gemv_BF16(benchmark::State& bs) { run(bs, DType::kBF16, 16384, 4096, bs.range(0)); }
// The same in the tiled layout (tensor/matrix.h; what Model::load uses by default).
void BM_Gemv_FP8_Tiled(benchmark::State& bs) {
  run(bs, DType::kF8E4M3, 16384, 4096, bs.range(0), true);
}
void BM_Gemv_BF16_Tiled(benchmark::State& bs) {
  run(bs, DType::kBF16, 16384, 4096, bs.range(0), true);
}
// ds-mini's lm_head (129280 x 1024 BF16, 265 MB) at decode batches 1 and 16: a short row (1024
// columns: 8 column blocks per tile) streamed from DRAM.
void BM_LmHead_BF16_Tiled(benchmark::State& bs) {
  run(bs, DType::kBF16, 129280, 1024, bs.range(0), true);
}
// ds-mini prefill shapes: o_proj-like 1024x1024 and a routed expert's gate (512x1024) at the ~48
// tokens an expert sees in a 512-token prefill (6 of 64 experts per token). The 1024x1024 matrix
// (1 MiB, cache resident) at 4 and 16 tokens is the batched-decode kernel's compute rate; the
// 16-token BF16 GEMV above is lm_head at decode batch 16. At 1 token the cache-resident rate is
// the GEMV's compute ceiling (weight bytes decoded per second with no DRAM wait): compare it with
// roofline_bench's read bandwidth to see whether a dtype's decode can keep up with memory.
void BM_Gemm_FP8_1024(benchmark::State& bs) { run(bs, DType::kF8E4M3, 1024, 1024, bs.range(0)); }
void BM_Gemm_FP8_Expert(benchmark::State& bs) { run(bs, DType::kF8E4M3, 512, 1024, bs.range(0)); }

BENCHMARK(BM_Gemv_FP8)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->UseRealTime();
BENCHMARK(BM_Gemv_BF16)->Arg(1)->Arg(4)->UseRealTime();
BENCHMARK(BM_Gemv_FP8_Tiled)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->UseRealTime();
BENCHMARK(BM_Gemv_BF16_Tiled)->Arg(1)->Arg(4)->Arg(16)->UseRealTime();
BENCHMARK(BM_LmHead_BF16_Tiled)->Arg(1)->Arg(16)->UseRealTime();
void BM_Gemm_FP8_1024_Tiled(benchmark::State& bs) {
  run(bs, DType::kF8E4M3, 1024, 1024, bs.range(0), true);
}
void BM_Gemm_BF16_1024_Tiled(benchmark::State& bs) {
  run(bs, DType::kBF16, 1024, 1024, bs.range(0), true);
}
void BM_Gemm_FP8_Expert_Tiled(benchmark::State& bs) {
  run(bs, DType::kF8E4M3, 512, 1024, bs.range(0), true);
}

BENCHMARK(BM_Gemm_FP8_1024)->Arg(512)->Arg(2048)->UseRealTime();
BENCHMARK(BM_Gemm_FP8_Expert)->Arg(48)->UseRealTime();
BENCHMARK(BM_Gemm_FP8_1024_Tiled)->Arg(1)->Arg(4)->Arg(16)->Arg(512)->Arg(2048)->UseRealTime();
BENCHMARK(BM_Gemm_BF16_1024_Tiled)->Arg(1)->Arg(16)->UseRealTime();
BENCHMARK(BM_Gemm_FP8_Expert_Tiled)->Arg(48)->UseRealTime();

// The same tiled shapes with MatmulArith::kBf16Dot (x rounded to bf16, vdpbf16ps; CPUs with
// AVX512-BF16 only): compare each with its _Tiled (float32 FMA) twin above.
void BM_Gemv_FP8_Bf16Dot(benchmark::State& bs) {
  run(bs, DType::kF8E4M3, 16384, 4096, bs.range(0), true, true);
}
void BM_LmHead_BF16_Bf16Dot(benchmark::State& bs) {
  run(bs, DType::kBF16, 129280, 1024, bs.range(0), true, true);
}
void BM_Gemm_FP8_1024_Bf16Dot(benchmark::State& bs) {
  run(bs, DType::kF8E4M3, 1024, 1024, bs.range(0), true, true);
}
void BM_Gemm_BF16_1024_Bf16Dot(benchmark::State& bs) {
  run(bs, DType::kBF16, 1024, 1024, bs.range(0), true, true);
}
void BM_Gemm_FP8_Expert_Bf16Dot(benchmark::State& bs) {
  run(bs, DType::kF8E4M3, 512, 1024, bs.range(0), true, true);
}
BENCHMARK(BM_Gemv_FP8_Bf16Dot)->Arg(1)->Arg(16)->UseRealTime();
BENCHMARK(BM_LmHead_BF16_Bf16Dot)->Arg(1)->Arg(16)->UseRealTime();
BENCHMARK(BM_Gemm_FP8_1024_Bf16Dot)->Arg(1)->Arg(4)->Arg(16)->Arg(512)->Arg(2048)->UseRealTime();
BENCHMARK(BM_Gemm_BF16_1024_Bf16Dot)->Arg(1)->Arg(16)->UseRealTime();
BENCHMARK(BM_Gemm_FP8_Expert_Bf16Dot)->Arg(1)->Arg(2)->Arg(4)->Arg(48)->UseRealTime();

// The bf16-dot shapes in the pair-interleaved layout (WeightLayout::kTiledPairs, what the model
// loads for bf16-dot): no interleave per column pair at decode; compare each with its _Bf16Dot
// twin above (the same products, bit-identical results).
void BM_Gemv_FP8_Bf16DotPairs(benchmark::State& bs) {
  run(bs, DType::kF8E4M3, 16384, 4096, bs.range(0), true, true, true);
}
void BM_LmHead_BF16_Bf16DotPairs(benchmark::State& bs) {
  run(bs, DType::kBF16, 129280, 1024, bs.range(0), true, true, true);
}
void BM_Gemm_FP8_1024_Bf16DotPairs(benchmark::State& bs) {
  run(bs, DType::kF8E4M3, 1024, 1024, bs.range(0), true, true, true);
}
void BM_Gemm_BF16_1024_Bf16DotPairs(benchmark::State& bs) {
  run(bs, DType::kBF16, 1024, 1024, bs.range(0), true, true, true);
}
void BM_Gemm_FP8_Expert_Bf16DotPairs(benchmark::State& bs) {
  run(bs, DType::kF8E4M3, 512, 1024, bs.range(0), true, true, true);
}
BENCHMARK(BM_Gemv_FP8_Bf16DotPairs)->Arg(1)->Arg(16)->UseRealTime();
BENCHMARK(BM_LmHead_BF16_Bf16DotPairs)->Arg(1)->Arg(4)->Arg(16)->UseRealTime();
BENCHMARK(BM_Gemm_FP8_1024_Bf16DotPairs)
    ->Arg(1)
    ->Arg(4)
    ->Arg(16)
    ->Arg(512)
    ->Arg(2048)
    ->UseRealTime();
BENCHMARK(BM_Gemm_BF16_1024_Bf16DotPairs)
    ->Arg(1)
    ->Arg(4)
    ->Arg(6)
    ->Arg(8)
    ->Arg(10)
    ->Arg(12)
    ->Arg(16)
    ->UseRealTime();
BENCHMARK(BM_Gemm_FP8_Expert_Bf16DotPairs)->Arg(1)->Arg(2)->Arg(3)->Arg(4)->Arg(48)->UseRealTime();

}  // namespace
}  // namespace dss

BENCHMARK_MAIN();
