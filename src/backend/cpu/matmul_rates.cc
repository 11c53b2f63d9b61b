// CpuBackend::measure_matmul_rates and cpu_model_key: what --matmul-dtype auto decides by.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "base/clock.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul_parallel.h"
#include "tensor/tiled_layout.h"

namespace dss {

namespace {

// Timed rounds after the warm-up. A round runs every product once, the arithmetics interleaved,
// so a burst of load from elsewhere on a shared machine slows both alike; each product's fastest
// round counts (such load only ever slows). A round is ~5 ms at the default shape.
constexpr int kRounds = 8;
// GEMVs per 1-token sample: one alone (~50 us) is at the mercy of a worker's wake-up.
constexpr int kGemvsPerSample = 8;

// Seconds of `reps` products of n_tok tokens.
double time_products(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tok, float* y,
                     int reps) {
  const double t0 = now_seconds();
  for (int i = 0; i < reps; ++i) cpu::matmul_parallel(pool, w, x, n_tok, y);
  return now_seconds() - t0;
}

// GFLOP/s from the fastest seconds per arithmetic (index 0: f32, 1: bf16 when timed).
MatmulRates to_rates(const std::vector<double>& gemv, const std::vector<double>& gemm,
                     double gflop_1, int64_t n_tok) {
  MatmulRates r;
  r.f32_gemv = gflop_1 * kGemvsPerSample / gemv[0];
  r.f32_gemm = gflop_1 * static_cast<double>(n_tok) / gemm[0];
  if (gemv.size() > 1) {
    r.bf16_gemv = gflop_1 * kGemvsPerSample / gemv[1];
    r.bf16_gemm = gflop_1 * static_cast<double>(n_tok) / gemm[1];
  }
  return r;
}

}  // namespace

std::string CpuBackend::cpu_model_key() {
  const cpu::CpuDescription& d = cpu::describe_cpu();
  char fms[64];
  std::snprintf(fms, sizeof(fms), "family %d model %d stepping %d", d.family, d.model, d.stepping);
  return d.vendor + " | " + d.brand + " | " + fms + " | " + d.target;
}

MatmulProbe CpuBackend::measure_matmul_rates(int64_t n_rows, int64_t n_cols, int64_t n_tok) const {
  // Random e4m3 codes without NaN (0x7f / 0xff) and one scale for all blocks.
  Matrix w;
  w.dtype = DType::kF8E4M3;
  w.n_rows = n_rows;
  w.n_cols = n_cols;
  std::vector<uint8_t> codes(static_cast<size_t>(n_rows * n_cols));
  uint32_t s = 7;
  for (uint8_t& c : codes) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    c = static_cast<uint8_t>(s & 0x7e);
  }
  std::vector<float> scales(static_cast<size_t>(w.n_scale_rows() * w.n_scale_cols()), 1.0f / 256);
  w.data = codes.data();
  w.scales = scales.data();
  std::vector<float> x(static_cast<size_t>(n_tok * n_cols)), y(static_cast<size_t>(n_tok * n_rows));
  for (float& v : x) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 8) / 16777216.0f - 0.5f;
  }
  // The arithmetics to time: f32 on kTiled, bf16 dot on kTiledPairs where the CPU has it.
  std::vector<OwnedMatrix> copies;
  std::vector<Matrix> ws;
  copies.push_back(tile_matrix(w, WeightLayout::kTiled));
  ws.push_back(copies.back().view());
  if (cpu_has_bf16_dot() && can_tile(w, WeightLayout::kTiledPairs)) {
    copies.push_back(tile_matrix(w, WeightLayout::kTiledPairs));
    ws.push_back(copies.back().view());
    ws.back().arith = MatmulArith::kBf16Dot;
  }
  const size_t n = ws.size();
  // Fastest seconds per arithmetic in each half of the rounds.
  std::vector<double> gemv[2] = {std::vector<double>(n, 1e30), std::vector<double>(n, 1e30)};
  std::vector<double> gemm[2] = {gemv[0], gemv[0]};
  for (int round = -1; round < kRounds; ++round) {  // round -1: the warm-up
    for (size_t i = 0; i < n; ++i) {
      const double t1 = time_products(*pool_, ws[i], x.data(), 1, y.data(), kGemvsPerSample);
      const double tn = time_products(*pool_, ws[i], x.data(), n_tok, y.data(), 1);
      if (round < 0) continue;
      const int h = round < kRounds / 2 ? 0 : 1;
      gemv[h][i] = std::min(gemv[h][i], t1);
      gemm[h][i] = std::min(gemm[h][i], tn);
    }
  }
  const double gflop_1 = 2e-9 * static_cast<double>(n_rows * n_cols);
  std::vector<double> gemv_all(n), gemm_all(n);
  for (size_t i = 0; i < n; ++i) {
    gemv_all[i] = std::min(gemv[0][i], gemv[1][i]);
    gemm_all[i] = std::min(gemm[0][i], gemm[1][i]);
  }
  return MatmulProbe{to_rates(gemv_all, gemm_all, gflop_1, n_tok),
                     to_rates(gemv[0], gemm[0], gflop_1, n_tok),
                     to_rates(gemv[1], gemm[1], gflop_1, n_tok)};
}

}  // namespace dss
