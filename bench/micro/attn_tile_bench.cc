// MLA naive-prefill attention of one head over one tile of positions (kernels/cpu/attn_tile.h):
// scores, the online-softmax step and P V for n_tok query tokens that all attend the whole tile
// (a tile below the causal diagonal, the common case in a long prompt), one thread. Reports
// GFLOP/s = 2 * n_tok * tile * (d_qk + d_v) per iteration and its fraction of this machine's
// 1-thread FP32 FMA peak (src/perf/compute_peak.h, measured once). Shapes: ds-mini / the 671B
// model (d_nope 64 / 128, d_rope 32 / 64, d_v 64 / 128), tile 128 as CpuBackend::mla_prefill runs
// it.
#include <benchmark/benchmark.h>

#include <limits>
#include <vector>

#include "base/rng.h"
#include "kernels/cpu/attn_tile.h"
#include "perf/compute_peak.h"

namespace dss {
namespace {

constexpr int64_t kTile = 128;

double fma_peak_1t() {
  static const double peak = perf::measure_fma_gflops(1);
  return peak;
}

void BM_AttnTile(benchmark::State& bs) {
  const int64_t n_tok = bs.range(0), d_nope = bs.range(1), d_rope = bs.range(2), d_v = bs.range(3);
  const int64_t d_qk = d_nope + d_rope;
  Rng rng(5);
  auto fill = [&](std::vector<float>& v, float s) {
    for (float& x : v) x = s * rng.normal();
  };
  std::vector<float> q(static_cast<size_t>(n_tok * d_qk)),
      kt_a(static_cast<size_t>(d_nope * kTile)), kt_b(static_cast<size_t>(d_rope * kTile)),
      v(static_cast<size_t>(kTile * d_v));
  fill(q, 0.3f);
  fill(kt_a, 0.3f);
  fill(kt_b, 0.3f);
  fill(v, 1.0f);
  std::vector<float> s(static_cast<size_t>(n_tok * kTile)), m(static_cast<size_t>(n_tok)),
      l(static_cast<size_t>(n_tok)), corr(static_cast<size_t>(n_tok)),
      o(static_cast<size_t>(n_tok * d_v));
  const std::vector<int32_t> n_valid(static_cast<size_t>(n_tok), static_cast<int32_t>(kTile));
  const float scale = 1.0f / 12.0f;
  for (auto _ : bs) {
    cpu::attn_tile_scores(q.data(), d_qk, n_tok, kt_a.data(), d_nope, kt_b.data(), d_rope, kTile,
                          kTile, n_valid.data(), s.data(), kTile);
    cpu::attn_tile_softmax(s.data(), kTile, n_tok, kTile, n_valid.data(), scale, m.data(), l.data(),
                           corr.data());
    cpu::attn_tile_pv(s.data(), kTile, n_tok, n_valid.data(), v.data(), d_v, d_v, corr.data(),
                      o.data(), d_v);
    benchmark::DoNotOptimize(o.data());
  }
  const double flops = 2.0 * static_cast<double>(n_tok * kTile * (d_qk + d_v));
  bs.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  bs.counters["frac_fma_peak"] = benchmark::Counter(flops * 1e-9 / fma_peak_1t(),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AttnTile)
    ->ArgNames({"tokens", "d_nope", "d_rope", "d_v"})
    ->Args({6, 64, 32, 64})
    ->Args({48, 64, 32, 64})
    ->Args({512, 64, 32, 64})
    ->Args({512, 128, 64, 128});

}  // namespace
}  // namespace dss

BENCHMARK_MAIN();
