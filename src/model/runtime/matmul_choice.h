// --matmul-dtype auto: the faster of the tiled linear layers' two arithmetics (f32 FMA, bf16 dot)
// on this CPU, measured at start-up (CpuBackend::measure_matmul_rates, well under 100 ms) and
// cached per CPU model, because which one wins is not a property of the instruction set: an Intel
// Xeon VM with AVX512-BF16 ran pp512 407 tok/s in bf16 and 532 in f32 (issue #41).
#pragma once

#include <string>

#include "backend/cpu/cpu_backend.h"
#include "base/status.h"
#include "model/runtime/load_options.h"

namespace dss {

// The rule, a pure function of the two measured rates (GFLOP/s): kBf16 where the CPU has the
// bf16 dot (bf16_available) and it measured strictly faster, else kF32 (ties keep DeepSeek's f32
// reference arithmetic).
MatmulDType choose_matmul_dtype(double f32_gflops, double bf16_gflops, bool bf16_available);

// One arithmetic's rate from its GEMV rate (1 token) and GEMM rate (kMatmulProbeTokens tokens):
// their geometric mean, so that a factor gained at one counts as much as the same factor lost at
// the other (decode is mostly memory-bound, prefill compute-bound; neither alone decides).
double matmul_rate(double gemv_gflops, double gemm_gflops);

// What auto resolved to and why (bench-model's JSON "matmul_auto", the start-up log line).
struct MatmulChoice {
  MatmulDType dtype = MatmulDType::kF32;  // kF32 | kBf16
  // Each arithmetic's rate (matmul_rate of its GEMV and GEMM rates), GFLOP/s; 0: not measured.
  double f32_gflops = 0, bf16_gflops = 0;
  MatmulRates rates;  // the four measured rates (from the cache: the two combined ones only)
  // "measured" (and cached) | "measured-unstable" (the two halves of the probe's rounds chose
  // differently, or it took over kMatmulProbeTrustS: not cached) | "cache" (read from cache_path) |
  // "no-bf16" (nothing timed) | "not-applicable" (--weight-layout mmap or --act-quant fp8: f32
  // only)
  std::string source;
  std::string cpu;         // CpuBackend::cpu_model_key()
  std::string cache_path;  // the cache file ("" if no cache directory is known)
  double probe_s = 0;      // seconds spent measuring (0 when read from the cache)
};

// The probe's product: DeepSeek-V3's kv_a_proj_with_mqa [576, 7168] (a real projection shape,
// 4.1 MB of FP8, measured the same for every checkpoint so that one cached result serves all), at
// 1 and kMatmulProbeTokens tokens: ~0.5 GFLOP per timed GEMM, so the eight of them stay well
// under 100 ms at the rates that matter (>= 100 GFLOP/s).
inline constexpr int64_t kMatmulProbeRows = 576;
inline constexpr int64_t kMatmulProbeCols = 7168;
// A probe slower than this was disturbed by load from elsewhere (it takes ~50-80 ms on an idle
// 2-core Zen 5 VM, over 1 s at a load average of 6 there): its result is used but not cached.
inline constexpr double kMatmulProbeTrustS = 0.5;
inline constexpr int64_t kMatmulProbeTokens = 64;

// $XDG_CACHE_HOME/dsserve/matmul-dtype.tsv, else $HOME/.cache/dsserve/matmul-dtype.tsv ("" when
// neither variable is set). Lines: "<cpu key>\t<threads>\t<f32 GFLOP/s>\t<bf16 GFLOP/s>".
std::string matmul_cache_path();

// auto's choice on backend `be` (its pool and thread count): the cached rates for
// (cpu_model_key, be.n_threads()) when present and DSSERVE_MATMUL_REMEASURE is unset or "0",
// else measured now and written back unless the measurement was unstable (a cache that cannot be
// written is only logged). Logs the choice and both rates at info level.
MatmulChoice choose_matmul_dtype_auto(const CpuBackend& be);

}  // namespace dss
