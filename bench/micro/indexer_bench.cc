// V3.2 lightning-indexer kernels (kernels/cpu/indexer_score.h), one thread:
//   BM_IndexScores/HI/n: scores of n cached keys (D = 128 e4m3) for one query with HI heads;
//     GFLOP/s = 2 * HI * D * n / time, and frac_peak = that / this machine's 1-thread FP32 FMA
//     peak (the FmaChains kernel of roofline_bench, measured once, in thread CPU time;
//     the counter prints as "/s", it is a plain ratio). The keys
//     (n * 128 bytes: 4 MiB at 32K) stay in cache between iterations: a compute figure.
//     n = 64 is one page (in L1), 2048 fits L2.
//   BM_IndexDecodeStep/n/run: one decode token's 12 layers at context n, keys streamed from
//     memory, top-k included, one thread (see below).
//   BM_IndexScoresAllThreads/n: the same scoring over all threads, as the forward pass runs it.
//   BM_TopK/n: top_k_indices(k = 2048) over n random scores; keys/s.
// Usage: indexer_bench [Google Benchmark flags]
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/micro/indexer_bench.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// (after foreach_target: re-included once per target)
#include "perf/fma_chains-inl.h"

#if HWY_ONCE
#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
#include <thread>
#include <vector>

#include "base/rng.h"
#include "base/thread_pool.h"
#include "kernels/cpu/indexer_score.h"

namespace dss::perf {
HWY_EXPORT(FmaChains);
namespace {
// perf/fma_chains-inl.h's kernel on the best target of this CPU.
double fma_chains(int64_t iters, float* sink) {
  return HWY_DYNAMIC_DISPATCH(FmaChains)(iters, sink);
}
}  // namespace
}  // namespace dss::perf

namespace dss::bench {
namespace {

constexpr int32_t kD = 128, kPage = 64;

// CPU seconds of this thread: the benchmarks' rates are per CPU second too, so the fraction
// stays meaningful on a shared, busy machine.
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double fma_peak_gflops_1t() {
  static const double peak = [] {
    float sink = 0.0f;
    double best = 0.0;
    for (int rep = 0; rep < 3; ++rep) {
      const double t0 = thread_cpu_s();
      const double flops = perf::fma_chains(20'000'000, &sink);
      best = std::max(best, flops / (thread_cpu_s() - t0) * 1e-9);
    }
    benchmark::DoNotOptimize(sink);
    return best;
  }();
  return peak;
}

void BM_IndexScores(benchmark::State& bs) {
  const auto HI = static_cast<int32_t>(bs.range(0));
  const int64_t n = bs.range(1);
  Rng rng(3);
  std::vector<uint8_t> keys(static_cast<size_t>(n * kD));
  for (auto& b : keys) b = static_cast<uint8_t>(rng.next_u64() % 0x7F);  // no NaN codes
  std::vector<float> key_scales(static_cast<size_t>(n), 0.5f), q(static_cast<size_t>(HI * kD)),
      coef(static_cast<size_t>(HI)), scores(static_cast<size_t>(n));
  for (auto& v : q) v = rng.normal();
  for (auto& v : coef) v = rng.normal();
  for (auto _ : bs) {
    for (int64_t i = 0; i < n; i += kPage) {  // pages of [D, kPage] keys, as the cache
      cpu::index_scores(keys.data() + i * kD, kPage, key_scales.data() + i, kPage, q.data(),
                        coef.data(), HI, kD, scores.data() + i);
    }
    benchmark::DoNotOptimize(scores.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * HI * kD * static_cast<double>(n);
  bs.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  const double peak = fma_peak_gflops_1t();
  bs.counters["peak_GFLOP/s"] = peak;
  bs.counters["frac_peak"] =
      benchmark::Counter(flops * 1e-9 / peak, benchmark::Counter::kIsIterationInvariantRate);
}

// One decode token's indexer work over the 12 layers of ds-mini-v32 at context n (HI = 8):
// the keys of all layers (12 * n * 128 bytes: 48 MiB at 32K, beyond the L3) streamed from
// memory, laid out as the cache lays them out (pages of `run` keys, each [D, run]) and scored one
// call per page (run 64: the default page size; 1 << 20: one call per layer), then top-2048 per
// layer. Per-token milliseconds, one thread.
// The inputs of one decode token's indexer work over kLayers layers at context n: keys
// [kLayers, n, kD] e4m3 (no NaN codes), key scales, a query of kHI heads, coefficients, and the
// scores row they are written to.
constexpr int32_t kHI = 8, kLayers = 12;
struct DecodeStepCase {
  std::vector<uint8_t> keys;
  std::vector<float> key_scales, q, coef, scores;
  DecodeStepCase(int64_t n, uint64_t seed)
      : keys(static_cast<size_t>(kLayers * n * kD)),
        key_scales(static_cast<size_t>(kLayers * n), 0.5f),
        q(static_cast<size_t>(kHI * kD)),
        coef(kHI),
        scores(static_cast<size_t>(n)) {
    Rng rng(seed);
    for (auto& b : keys) b = static_cast<uint8_t>(rng.next_u64() % 0x7F);
    for (auto& v : q) v = rng.normal();
    for (auto& v : coef) v = rng.normal();
  }
};

void BM_IndexDecodeStep(benchmark::State& bs) {
  const int64_t n = bs.range(0), run = bs.range(1);
  DecodeStepCase c(n, 5);
  auto& [keys, key_scales, q, coef, scores] = c;
  const int64_t k = std::min<int64_t>(2048, n);
  std::vector<int32_t> out(static_cast<size_t>(k)), scratch(static_cast<size_t>(n));
  for (auto _ : bs) {
    for (int32_t l = 0; l < kLayers; ++l) {
      const uint8_t* lk = keys.data() + static_cast<size_t>(l * n * kD);
      const float* ls = key_scales.data() + static_cast<size_t>(l * n);
      const int64_t ld = std::min(run, n);
      for (int64_t i = 0; i < n; i += ld) {
        const uint8_t* next = i + ld < n ? lk + (i + ld) * kD : nullptr;
        cpu::index_scores(lk + i * kD, ld, ls + i, std::min(ld, n - i), q.data(), coef.data(), kHI,
                          kD, scores.data() + i, next);
      }
      cpu::top_k_indices(scores.data(), n, k, out.data(), scratch.data());
      benchmark::DoNotOptimize(out.data());
    }
  }
  bs.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * kHI * kD * static_cast<double>(n) * kLayers * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}

// The scoring of BM_IndexDecodeStep (pages of 64 keys, 12 layers, keys streamed from memory, no
// top-k) split over all threads by the forward pass's pool, one dispatch per layer: what the
// model's decode step gets from the indexer kernel with every core busy. GFLOP/s per thread, wall
// time (compare with BM_IndexDecodeStep/run:64's one-thread figure).
void BM_IndexScoresAllThreads(benchmark::State& bs) {
  const int64_t n = bs.range(0);
  static ThreadPool pool(static_cast<int32_t>(std::thread::hardware_concurrency()));
  DecodeStepCase c(n, 6);
  auto& [keys, key_scales, q, coef, scores] = c;
  const int64_t n_pages = n / kPage;
  for (auto _ : bs) {
    for (int32_t l = 0; l < kLayers; ++l) {
      const uint8_t* lk = keys.data() + static_cast<size_t>(l * n * kD);
      const float* ls = key_scales.data() + static_cast<size_t>(l * n);
      pool.parallel_for(n_pages, 1, [&](int64_t j0, int64_t j1, int32_t) {
        for (int64_t j = j0; j < j1; ++j) {
          const uint8_t* next = j + 1 < j1 ? lk + (j + 1) * kPage * kD : nullptr;
          cpu::index_scores(lk + j * kPage * kD, kPage, ls + j * kPage, kPage, q.data(),
                            coef.data(), kHI, kD, scores.data() + j * kPage, next);
        }
      });
    }
    benchmark::DoNotOptimize(scores.data());
  }
  bs.counters["threads"] = pool.n_threads();
  bs.counters["GFLOP/s/thread"] = benchmark::Counter(
      2.0 * kHI * kD * static_cast<double>(n) * kLayers * 1e-9 / pool.n_threads(),
      benchmark::Counter::kIsIterationInvariantRate);
}

void BM_TopK(benchmark::State& bs) {
  const int64_t n = bs.range(0), k = std::min<int64_t>(2048, n);
  Rng rng(4);
  std::vector<float> scores(static_cast<size_t>(n));
  for (auto& v : scores) v = rng.normal();
  std::vector<int32_t> out(static_cast<size_t>(k)), scratch(static_cast<size_t>(n));
  for (auto _ : bs) {
    cpu::top_k_indices(scores.data(), n, k, out.data(), scratch.data());
    benchmark::DoNotOptimize(out.data());
  }
  bs.SetItemsProcessed(bs.iterations() * n);
}

BENCHMARK(BM_IndexScores)
    ->ArgNames({"HI", "n"})
    ->ArgsProduct({{8, 64}, {64, 2048, 32768}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_IndexDecodeStep)
    ->ArgNames({"n", "run"})
    ->ArgsProduct({{8192, 32768}, {64, 1 << 20}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_IndexScoresAllThreads)
    ->ArgName("n")
    ->Arg(32768)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TopK)->Arg(4096)->Arg(32768)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace dss::bench

BENCHMARK_MAIN();
#endif  // HWY_ONCE
