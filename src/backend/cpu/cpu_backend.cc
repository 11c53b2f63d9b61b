#include "backend/cpu/cpu_backend.h"

#include <algorithm>

#include "backend/cpu/cpu_scratch.h"
#include "base/check.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul_parallel.h"
#include "kernels/cpu/mla_attn.h"
#include "kernels/cpu/vec_ops.h"

namespace dss {

CpuBackend::CpuBackend(const Options& o)
    : o_(o), pool_(std::make_unique<ThreadPool>(std::max(1, o.n_threads))) {}

bool CpuBackend::cpu_has_bf16_dot() { return cpu::cpu_has_bf16_dot(); }

std::unique_ptr<BackendScratch> CpuBackend::make_scratch(const ModelConfig& cfg,
                                                         const WorkspaceLimits& lim) const {
  DSS_CHECK(lim.n_threads >= n_threads(), "workspace built for ", lim.n_threads, " threads");
  DSS_CHECK(!o_.act_quant_fp8 || lim.act_quant, "W8A8 model needs WorkspaceLimits::act_quant");
  return std::make_unique<CpuScratch>(cfg, lim);
}

void CpuBackend::linear(const Matrix& w, const float* x, int64_t n_tok, float* y,
                        BackendScratch& s) const {
  if (o_.act_quant_fp8 && w.dtype == DType::kF8E4M3) {  // W8A8
    std::vector<float>& q = cpu_scratch(s).act_q;
    DSS_CHECK(static_cast<size_t>(n_tok * w.n_cols) <= q.size(), "W8A8 scratch too small: ", n_tok,
              " x ", w.n_cols);
    cpu::act_quant_fp8(x, n_tok, w.n_cols, o_.act_quant_ue8m0, q.data());
    x = q.data();
  }
  cpu::matmul_parallel(*pool_, w, x, n_tok, y);
}

void CpuBackend::linear_pair(const Matrix& w0, float* y0, const Matrix& w1, float* y1,
                             const float* x, int64_t n_tok, BackendScratch& s) const {
  if (o_.act_quant_fp8) {  // W8A8 quantises x per product
    linear(w0, x, n_tok, y0, s);
    linear(w1, x, n_tok, y1, s);
    return;
  }
  const cpu::MatmulProduct products[] = {{&w0, x, y0}, {&w1, x, y1}};
  cpu::matmul_parallel(*pool_, products, n_tok);
}

void CpuBackend::embed(const Matrix& table, const int32_t* ids, int64_t n, float* h,
                       int64_t row_begin) const {
  const int64_t d = table.n_cols;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t r = ids[t] - row_begin;
    float* row = h + t * d;
    if (r < 0 || r >= table.n_rows) {
      std::fill(row, row + d, 0.0f);
      continue;
    }
    for (int64_t j = 0; j < d; ++j) row[j] = table.at(r, j);
  }
}

void CpuBackend::rmsnorm_rows(const float* x, const Vector& w, int64_t n_rows, int64_t width,
                              float eps, float* y) const {
  for (int64_t t = 0; t < n_rows; ++t) cpu::rmsnorm(x + t * width, w, width, eps, y + t * width);
}

void CpuBackend::add_rows(const float* x, int64_t n, float* y) const { cpu::axpy(1.0f, x, y, n); }

void CpuBackend::ffn(const FfnWeights& f, const float* x, int64_t n_tok, float* y,
                     BackendScratch& s) const {
  CpuScratch& c = cpu_scratch(s);
  linear(f.gate, x, n_tok, c.gate.data(), s);
  linear(f.up, x, n_tok, c.up.data(), s);
  cpu::silu_mul(c.gate.data(), c.up.data(), n_tok * f.gate.n_rows, c.gate.data());
  linear(f.down, c.gate.data(), n_tok, y, s);
}

}  // namespace dss
