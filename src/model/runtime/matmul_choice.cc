#include "model/runtime/matmul_choice.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "base/clock.h"
#include "base/log.h"

namespace dss {

namespace {

struct CacheLine {
  std::string cpu;
  int32_t n_threads = 0;
  double f32 = 0, bf16 = 0;
};

std::vector<CacheLine> read_cache(const std::string& path) {
  std::vector<CacheLine> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    CacheLine c;
    std::string threads, f32, bf16;
    if (!std::getline(fields, c.cpu, '\t') || !std::getline(fields, threads, '\t') ||
        !std::getline(fields, f32, '\t') || !std::getline(fields, bf16))
      continue;  // a malformed line is skipped (and dropped at the next write)
    c.n_threads = std::atoi(threads.c_str());
    c.f32 = std::atof(f32.c_str());
    c.bf16 = std::atof(bf16.c_str());
    if (c.n_threads > 0 && c.f32 > 0) out.push_back(c);
  }
  return out;
}

// Replaces (cpu, n_threads)'s line; the others are kept. Errors are logged, never fatal.
void write_cache(const std::string& path, const CacheLine& now) {
  std::vector<CacheLine> lines = read_cache(path);
  std::erase_if(
      lines, [&](const CacheLine& c) { return c.cpu == now.cpu && c.n_threads == now.n_threads; });
  lines.push_back(now);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const CacheLine& c : lines)
      out << c.cpu << '\t' << c.n_threads << '\t' << c.f32 << '\t' << c.bf16 << '\n';
    if (!out) {
      log_warn("--matmul-dtype auto: cannot write ", tmp, " (the measurement is not cached)");
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);  // atomic: a concurrent reader sees old or new
  if (ec) log_warn("--matmul-dtype auto: cannot write ", path, ": ", ec.message());
}

bool remeasure_requested() {
  const char* v = std::getenv("DSSERVE_MATMUL_REMEASURE");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

}  // namespace

MatmulDType choose_matmul_dtype(double f32_gflops, double bf16_gflops, bool bf16_available) {
  return bf16_available && bf16_gflops > f32_gflops ? MatmulDType::kBf16 : MatmulDType::kF32;
}

double matmul_rate(double gemv_gflops, double gemm_gflops) {
  return std::sqrt(gemv_gflops * gemm_gflops);
}

std::string matmul_cache_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg != '\0') return std::string(xdg) + "/dsserve/matmul-dtype.tsv";
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0')
    return std::string(home) + "/.cache/dsserve/matmul-dtype.tsv";
  return "";
}

MatmulChoice choose_matmul_dtype_auto(const CpuBackend& be) {
  MatmulChoice c;
  c.cpu = CpuBackend::cpu_model_key();
  c.cache_path = matmul_cache_path();
  const bool available = CpuBackend::cpu_has_bf16_dot();
  if (!available) {
    c.source = "no-bf16";
  } else {
    bool cached = false;
    if (!c.cache_path.empty() && !remeasure_requested()) {
      for (const CacheLine& l : read_cache(c.cache_path)) {
        if (l.cpu != c.cpu || l.n_threads != be.n_threads()) continue;
        c.f32_gflops = l.f32;
        c.bf16_gflops = l.bf16;
        cached = true;
      }
    }
    if (cached) {
      c.source = "cache";
    } else {
      const double t0 = now_seconds();
      const MatmulProbe p =
          be.measure_matmul_rates(kMatmulProbeRows, kMatmulProbeCols, kMatmulProbeTokens);
      c.probe_s = now_seconds() - t0;
      c.rates = p.best;
      c.f32_gflops = matmul_rate(c.rates.f32_gemv, c.rates.f32_gemm);
      c.bf16_gflops = matmul_rate(c.rates.bf16_gemv, c.rates.bf16_gemm);
      auto choice = [&](const MatmulRates& r) {
        return choose_matmul_dtype(matmul_rate(r.f32_gemv, r.f32_gemm),
                                   matmul_rate(r.bf16_gemv, r.bf16_gemm), available);
      };
      // Cached only when both halves of the rounds agree and the probe ran at its idle speed:
      // else load from elsewhere may have decided it, and the next start measures again.
      const bool stable = choice(p.first_half) == choice(p.second_half);
      c.source = stable && c.probe_s < kMatmulProbeTrustS ? "measured" : "measured-unstable";
      if (!c.cache_path.empty() && c.source == "measured")
        write_cache(c.cache_path, {c.cpu, be.n_threads(), c.f32_gflops, c.bf16_gflops});
    }
  }
  c.dtype = choose_matmul_dtype(c.f32_gflops, c.bf16_gflops, available);
  std::string detail;  // the measured parts
  if (c.source != "cache" && c.source != "no-bf16") {
    char b[160];
    std::snprintf(b, sizeof(b),
                  " in %.0f ms: GEMV f32 %.1f bf16 %.1f, GEMM x%lld f32 %.1f bf16 %.1f",
                  c.probe_s * 1e3, c.rates.f32_gemv, c.rates.bf16_gemv,
                  static_cast<long long>(kMatmulProbeTokens), c.rates.f32_gemm, c.rates.bf16_gemm);
    detail = b;
  }
  log_info("--matmul-dtype auto: ", to_string(c.dtype), " (f32 ", c.f32_gflops, " GFLOP/s, bf16 ",
           c.bf16_gflops, " GFLOP/s, ", c.source, detail, "; ", be.n_threads(), " threads, ", c.cpu,
           ")");
  return c;
}

}  // namespace dss
