// CudaBackend's operations against CpuBackend's on the same inputs (llama.cpp test-backend-ops
// style): each operation run on both backends, compared under a bound derived for it. Skipped
// without a CUDA device (scripts/gpu-check runs it on one).
//
// Bounds: both backends compute in float32 with float32 accumulation and differ only in the
// order of their sums, so an n-term dot product may differ by at most 2 n u sum |terms|
// (u = 2^-24; the textbook recursive-summation bound, once per backend). Element-wise operations
// and the norms are compared relative to their outputs' scale. The cache encodings (bf16 round
// to nearest even, e4m3 with power-of-two block scales) are exact functions of their inputs, so
// stored bytes must be identical.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "../kernels/random_matrix.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "base/rng.h"

namespace dss {
namespace {

ModelConfig small_config() {
  ModelConfig c;
  c.n_vocab = 300;
  c.d_model = 256;
  c.d_ff = 320;
  c.d_ff_expert = 96;
  c.n_layers = 1;
  c.n_heads = 4;
  c.q_lora_rank = 128;
  c.kv_lora_rank = 256;
  c.d_nope = 32;
  c.d_rope = 16;
  c.d_v = 32;
  c.n_experts = 8;
  c.n_experts_per_tok = 2;
  c.index_n_heads = 4;
  c.index_head_dim = 64;
  c.index_topk = 8;
  return c;
}

class CudaOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaBackend::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    auto be = CudaBackend::create({});
    ASSERT_TRUE(be.is_ok()) << be.message();
    gpu_ = std::move(*be);
    lim_.max_tokens = 17;
    lim_.max_kv_len = 64;
    lim_.max_logit_rows = 17;
    gpu_scratch_ = gpu_->make_scratch(cfg_, lim_);
    cpu_scratch_ = cpu_.make_scratch(cfg_, lim_);
  }
  // A device copy of n host bytes (kept alive by the fixture).
  template <typename T>
  T* up(const T* host, size_t n) {
    keep_.push_back(gpu_->allocate(n * sizeof(T) + 16, MemoryUse::kActivations));
    gpu_->upload(keep_.back().data(), host, n * sizeof(T));
    return reinterpret_cast<T*>(keep_.back().data());
  }
  std::vector<float> down(const float* dev, size_t n) {
    std::vector<float> v(n);
    gpu_->download(dev, v.data(), static_cast<int64_t>(n));
    return v;
  }
  Matrix up_matrix(const Matrix& m) {
    Matrix d = m;
    d.data = up(static_cast<const uint8_t*>(m.data), m.data_bytes());
    if (m.dtype == DType::kF8E4M3)
      d.scales = up(m.scales, static_cast<size_t>(m.n_scale_rows() * m.n_scale_cols()));
    if (m.dtype == DType::kI8) d.scales = up(m.scales, static_cast<size_t>(m.n_rows));
    return d;
  }
  std::vector<float> random(size_t n, float scale = 1.0f) {
    std::vector<float> v(n);
    for (float& x : v) x = scale * rng_.normal();
    return v;
  }

  ModelConfig cfg_ = small_config();
  WorkspaceLimits lim_;
  Rng rng_{7};
  std::unique_ptr<CudaBackend> gpu_;
  CpuBackend cpu_{CpuBackend::Options{1}};
  std::unique_ptr<BackendScratch> gpu_scratch_, cpu_scratch_;
  std::vector<Buffer> keep_;
};

void expect_close_rel(const std::vector<float>& got, const std::vector<float>& want, double rel) {
  ASSERT_EQ(got.size(), want.size());
  double scale = 1e-30;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - want[i]), rel * scale) << "element " << i;
}

TEST_F(CudaOps, LinearEveryDtypeWithinTheSummationBound) {
  for (const DType dt : {DType::kF32, DType::kBF16, DType::kF16, DType::kF8E4M3, DType::kI8}) {
    for (const int64_t T : {1, 3, 9, 17}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " T=" + std::to_string(T));
      const int64_t N = 300, K = 260;  // ragged against the 128 x 128 scale blocks
      test::RandomMatrix w = test::random_matrix(dt, N, K, rng_);
      const std::vector<float> x = random(static_cast<size_t>(T * K));
      std::vector<float> want(static_cast<size_t>(T * N));
      cpu_.linear(w.m, x.data(), T, want.data(), *cpu_scratch_);
      float* y = up(want.data(), want.size());
      gpu_->linear(up_matrix(w.m), up(x.data(), x.size()), T, y, *gpu_scratch_);
      const std::vector<float> got = down(y, want.size());
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t r = 0; r < N; ++r) {
          double abs_sum = 0.0;
          for (int64_t c = 0; c < K; ++c)
            abs_sum +=
                std::fabs(static_cast<double>(w.m.at(r, c)) * x[static_cast<size_t>(t * K + c)]);
          const double bound = 2.0 * K * std::ldexp(1.0, -24) * abs_sum + 1e-30;
          ASSERT_LE(
              std::fabs(got[static_cast<size_t>(t * N + r)] - want[static_cast<size_t>(t * N + r)]),
              bound)
              << "row " << r << " token " << t;
        }
      }
    }
  }
}

TEST_F(CudaOps, EmbedRmsnormAddFfn) {
  const int64_t d = cfg_.d_model, n = 5;
  test::RandomMatrix table = test::random_matrix(DType::kBF16, 40, d, rng_);
  const int32_t ids[n] = {100, 103, 139, 99, 140};  // rows 0, 3, 39; two outside [100, 140)
  std::vector<float> want(static_cast<size_t>(n * d));
  cpu_.embed(table.m, ids, n, want.data(), 100);
  gpu_->begin_forward(ForwardBatch{}, *gpu_scratch_);
  float* h = up(want.data(), want.size());
  gpu_->embed(up_matrix(table.m), up(ids, n), n, h, 100);
  EXPECT_EQ(down(h, want.size()), want);  // a copy of exact values

  test::RandomMatrix norm = test::random_matrix(DType::kBF16, 1, d, rng_);
  const Vector w{DType::kBF16, d, norm.m.data};
  const Vector w_dev{DType::kBF16, d,
                     up(static_cast<const uint8_t*>(norm.m.data), 2 * static_cast<size_t>(d))};
  const std::vector<float> x = random(static_cast<size_t>(n * d), 3.0f);
  std::vector<float> y_cpu(x.size());
  cpu_.rmsnorm_rows(x.data(), w, n, d, 1e-6f, y_cpu.data());
  float* y_dev = up(x.data(), x.size());
  gpu_->rmsnorm_rows(y_dev, w_dev, n, d, 1e-6f, y_dev);  // in place, as the contract allows
  expect_close_rel(down(y_dev, x.size()), y_cpu, 1e-5);

  std::vector<float> sum = y_cpu;
  cpu_.add_rows(x.data(), n * d, sum.data());
  gpu_->add_rows(up(x.data(), x.size()), n * d, y_dev);
  expect_close_rel(down(y_dev, x.size()), sum, 1e-5);

  test::RandomMatrix g = test::random_matrix(DType::kF8E4M3, cfg_.d_ff, d, rng_);
  test::RandomMatrix u = test::random_matrix(DType::kF8E4M3, cfg_.d_ff, d, rng_);
  test::RandomMatrix dn = test::random_matrix(DType::kF8E4M3, d, cfg_.d_ff, rng_);
  const FfnWeights f_cpu{g.m, u.m, dn.m};
  const FfnWeights f_gpu{up_matrix(g.m), up_matrix(u.m), up_matrix(dn.m)};
  std::vector<float> ffn_cpu(x.size());
  cpu_.ffn(f_cpu, x.data(), n, ffn_cpu.data(), *cpu_scratch_);
  float* ffn_dev = up(x.data(), x.size());
  gpu_->ffn(f_gpu, up(x.data(), x.size()), n, ffn_dev, *gpu_scratch_);
  expect_close_rel(down(ffn_dev, x.size()), ffn_cpu, 1e-4);
}

// The MLA cache rows and rotated queries; V3.2's FP8 latent may round a value to the neighbouring
// e4m3 code where the two backends' norms differ in the last bit, so there every value must be
// within one e4m3 step (1/8 relative) and all but a few within 1e-5.
TEST_F(CudaOps, MlaRopeRowsAndKvStore) {
  for (const bool fp8_latent : {false, true}) {
    SCOPED_TRACE(fp8_latent ? "fp8 latent" : "f32 latent");
    const int32_t T = 6, H = cfg_.n_heads, R = cfg_.kv_lora_rank, dr = cfg_.d_rope;
    const int32_t d_qk = cfg_.d_nope + dr, d_row = R + dr;
    const std::vector<int32_t> pos = {0, 1, 2, 7, 30, 63};
    std::vector<float> freqs(static_cast<size_t>(dr / 2));
    for (size_t i = 0; i < freqs.size(); ++i) freqs[i] = std::pow(10000.0f, -2.0f * i / dr);
    const std::vector<float> kv_a = random(static_cast<size_t>(T * d_row), 2.0f);
    const std::vector<float> q = random(static_cast<size_t>(T * H * d_qk));
    test::RandomMatrix norm = test::random_matrix(DType::kF32, 1, R, rng_);
    MlaRopeArgs a;
    a.shape = {H, cfg_.d_nope, dr, cfg_.d_v, R, 1.0f};
    a.n_tok = T;
    a.positions = pos.data();
    a.rope_freqs = freqs.data();
    a.eps = 1e-6f;
    a.fp8_latent = fp8_latent;
    a.d_row = d_row;
    std::vector<float> q_cpu = q, rows_cpu(static_cast<size_t>(T * d_row));
    const Vector nv{DType::kF32, R, norm.m.data};
    a.kv_a = kv_a.data();
    a.kv_a_norm = &nv;
    a.q = q_cpu.data();
    a.rows = rows_cpu.data();
    cpu_.mla_rope_rows(a, *cpu_scratch_);
    ForwardBatch b;
    b.positions = pos;
    gpu_->begin_forward(b, *gpu_scratch_);  // positions resolve to the staged copy
    const Vector nv_dev{DType::kF32, R,
                        up(static_cast<const float*>(norm.m.data), static_cast<size_t>(R))};
    a.kv_a = up(kv_a.data(), kv_a.size());
    a.kv_a_norm = &nv_dev;
    a.q = up(q.data(), q.size());
    a.rows = up(rows_cpu.data(), rows_cpu.size());
    CudaBackend& g = *gpu_;
    g.mirror_constant(freqs.data(), freqs.size());
    g.mla_rope_rows(a, *gpu_scratch_);
    expect_close_rel(down(a.q, q.size()), q_cpu, 1e-5);
    const std::vector<float> rows_gpu = down(a.rows, rows_cpu.size());
    int n_far = 0;
    for (size_t i = 0; i < rows_gpu.size(); ++i) {
      const float diff = std::fabs(rows_gpu[i] - rows_cpu[i]);
      n_far += diff > 1e-5f * (1.0f + std::fabs(rows_cpu[i]));
      ASSERT_LE(diff, 0.125f * std::fabs(rows_cpu[i]) + 1e-5f) << "value " << i;
    }
    EXPECT_LE(n_far, fp8_latent ? 4 : 0);

    // The same rows (the CPU's) into a cache of each storage dtype: identical bytes.
    for (const DType kv_dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
      SCOPED_TRACE(kv_dtype_name(kv_dtype));
      const KvLayout layout{1, R, dr, 16, 0, kv_dtype};
      KvCache host(layout, 4);
      KvCache dev(layout, 4,
                  gpu_->allocate(KvCache::storage_bytes(layout, 4), MemoryUse::kKvCache));
      const std::vector<int32_t> slots = {5, 17, 0, 63, 40, 33};
      cpu_.kv_store_rows(host, 0, slots.data(), rows_cpu.data(), T);
      ForwardBatch sb;
      sb.kv_write_slots = slots;
      gpu_->begin_forward(sb, *gpu_scratch_);
      gpu_->kv_store_rows(dev, 0, slots.data(), up(rows_cpu.data(), rows_cpu.size()), T);
      const size_t bytes = KvCache::storage_bytes(layout, 4);
      std::vector<float> got((bytes + 3) / 4);
      gpu_->download(reinterpret_cast<const float*>(dev.latent_rows(0)), got.data(),
                     static_cast<int64_t>(bytes / 4));
      EXPECT_EQ(std::memcmp(got.data(), host.latent_rows(0), bytes / 4 * 4), 0);
    }
  }
}

}  // namespace
}  // namespace dss
