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
#include "kernels/cpu/act_quant.h"
#include "tensor/dtype.h"

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
  std::vector<int32_t> down_i32(const int32_t* dev, size_t n) {  // download moves 4-byte words
    const std::vector<float> f = down(reinterpret_cast<const float*>(dev), n);
    std::vector<int32_t> v(n);
    std::memcpy(v.data(), f.data(), n * sizeof(int32_t));
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
  // Both ragged against the 128 x 128 scale blocks; K = 260 takes the kernel's 4-column vector
  // loads, K = 259 its one-column path.
  for (const auto& [N, K] : {std::pair<int64_t, int64_t>{300, 260}, {130, 259}}) {
    for (const DType dt : {DType::kF32, DType::kBF16, DType::kF16, DType::kF8E4M3, DType::kI8}) {
      for (const int64_t T : {1, 3, 9, 17}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " K=" + std::to_string(K) +
                     " T=" + std::to_string(T));
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
            ASSERT_LE(std::fabs(got[static_cast<size_t>(t * N + r)] -
                                want[static_cast<size_t>(t * N + r)]),
                      bound)
                << "row " << r << " token " << t;
          }
        }
      }
    }
  }
}

// W8A8 (--act-quant fp8): both backends quantise the input identically (the same amax, scale and
// round-to-nearest-even codes), so only the products' accumulation differs. [256 x 512] takes
// cuBLASLt's FP8 tensor cores, whose accumulation inside a 128-column block keeps about 14
// mantissa bits on Hopper (DeepSeek-V3 report, 3.3.2): per block at most 128 x 2^-14 of its
// sum |terms|; the block sums are then added in float32. [300 x 260] takes the float32 kernel
// over the dequantised values: the float32 bound above.
TEST_F(CudaOps, LinearW8A8AgainstTheCpu) {
  CudaBackend::Options o;
  o.act_quant_fp8 = true;
  auto be = CudaBackend::create(o);
  ASSERT_TRUE(be.is_ok()) << be.message();
  CudaBackend& gpu = **be;
  const CpuBackend cpu(CpuBackend::Options{1, true, false});
  WorkspaceLimits lim = lim_;
  lim.max_tokens = 64;
  lim.act_quant = true;
  ModelConfig c = cfg_;
  c.d_model = 512;
  auto gs = gpu.make_scratch(c, lim);
  auto cs = cpu.make_scratch(c, lim);
  struct Shape {
    int64_t N, K;
    double rel;  // of sum |terms|
  };
  for (const Shape sh : {Shape{256, 512, 128.0 * std::ldexp(1.0, -14)},
                         Shape{300, 260, 2.0 * 260 * std::ldexp(1.0, -24)}}) {
    for (const int64_t T : {1, 9, 64}) {
      SCOPED_TRACE("N=" + std::to_string(sh.N) + " K=" + std::to_string(sh.K) +
                   " T=" + std::to_string(T));
      test::RandomMatrix w = test::random_matrix(DType::kF8E4M3, sh.N, sh.K, rng_);
      const std::vector<float> x = random(static_cast<size_t>(T * sh.K));
      std::vector<float> want(static_cast<size_t>(T * sh.N)), xq = x;
      cpu.linear(w.m, x.data(), T, want.data(), *cs);
      cpu::act_quant_fp8(x.data(), T, sh.K, false, xq.data());  // the values both multiply
      float* y = up(want.data(), want.size());
      gpu.linear(up_matrix(w.m), up(x.data(), x.size()), T, y, *gs);
      const std::vector<float> got = down(y, want.size());
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t r = 0; r < sh.N; ++r) {
          double abs_sum = 0.0;
          for (int64_t k = 0; k < sh.K; ++k)
            abs_sum += std::fabs(static_cast<double>(w.m.at(r, k)) *
                                 xq[static_cast<size_t>(t * sh.K + k)]);
          const size_t i = static_cast<size_t>(t * sh.N + r);
          ASSERT_LE(std::fabs(got[i] - want[i]), sh.rel * abs_sum + 1e-30) << "row " << r;
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

// A sequence's cache for the attention and indexer tests: n_pos random rows stored at the
// positions of a page table whose pages are out of order, into a host cache (the CPU's) and a
// device one (kv_store_rows, checked byte-identical above).
struct TwoCaches {
  KvLayout layout;
  KvCache host;
  KvCache dev;
  std::vector<float> rows;  // [n_pos, d_row]
};

TwoCaches make_caches(CudaBackend& gpu, CpuBackend& cpu, BackendScratch& gpu_scratch,
                      const KvLayout& layout, int32_t n_pages, const std::vector<int32_t>& slots,
                      Rng& rng) {
  TwoCaches c{layout,
              KvCache(layout, n_pages),
              KvCache(layout, n_pages,
                      gpu.allocate(KvCache::storage_bytes(layout, n_pages), MemoryUse::kKvCache)),
              {}};
  const int32_t d_row = layout.d_row(), n = static_cast<int32_t>(slots.size());
  c.rows.resize(static_cast<size_t>(n) * d_row);
  for (int32_t t = 0; t < n; ++t) {
    float* row = c.rows.data() + static_cast<size_t>(t) * d_row;
    for (int32_t i = 0; i < layout.d_latent + layout.d_rope; ++i) row[i] = rng.normal();
    if (layout.d_index > 0) {  // e4m3 values and a power-of-two scale, as the model writes them
      for (int32_t d = 0; d < layout.d_index; ++d)
        row[layout.d_index_offset() + d] = fp8e4m3_to_f32(f32_to_fp8e4m3(2.0f * rng.normal()));
      row[layout.d_index_offset() + layout.d_index] = std::ldexp(1.0f, -3 - t % 4);
    }
  }
  cpu.kv_store_rows(c.host, 0, slots.data(), c.rows.data(), n);
  ForwardBatch b;
  b.kv_write_slots = slots;
  gpu.begin_forward(b, gpu_scratch);
  Buffer rows_dev = gpu.allocate(c.rows.size() * sizeof(float), MemoryUse::kActivations);
  gpu.upload(rows_dev.data(), c.rows.data(), c.rows.size() * sizeof(float));
  gpu.kv_store_rows(c.dev, 0, slots.data(), reinterpret_cast<const float*>(rows_dev.data()), n);
  float sink = 0;
  gpu.download(reinterpret_cast<const float*>(rows_dev.data()), &sink, 1);  // stored before free
  return c;
}

// Two sequences over one cache: sequence 0 a prefill chunk of 3 tokens at positions 37..39 on
// 37 cached ones (pages 3, 0, 5 of 16 tokens), sequence 1 one decode token at position 20
// (pages 1, 4). Both MLA forms, dense and with an indexer selection, over f32, bf16 and fp8
// caches: the CUDA backend's absorbed form against the CPU's naive (prefill) and absorbed
// (decode) forms, relative to the output's scale (float32 sums in other orders and expf).
TEST_F(CudaOps, MlaPrefillAndDecodeAgainstTheCpu) {
  const int32_t H = cfg_.n_heads, R = cfg_.kv_lora_rank, dn = cfg_.d_nope, dr = cfg_.d_rope;
  const int32_t dv = cfg_.d_v, d_qk = dn + dr, P = 16, max_pages = 3;
  const std::vector<int32_t> pages = {3, 0, 5, 1, 4, 0};  // [2, max_pages]
  std::vector<int32_t> slots;                             // position p of sequence s at slot(s, p)
  auto slot = [&](int32_t s, int32_t p) {
    return pages[static_cast<size_t>(s * max_pages + p / P)] * P + p % P;
  };
  for (int32_t p = 0; p < 40; ++p) slots.push_back(slot(0, p));
  for (int32_t p = 0; p < 21; ++p) slots.push_back(slot(1, p));
  const std::vector<int32_t> tokens = {1, 2, 3, 4}, positions = {37, 38, 39, 20};
  const std::vector<int32_t> begin = {0, 3, 4}, kv_len = {40, 21};
  ForwardBatch b;
  b.tokens = tokens;
  b.positions = positions;
  b.seq_token_begin = begin;
  b.seq_kv_len = kv_len;
  b.page_table = pages;
  b.max_pages = max_pages;
  // kv_b [H (dn + dv), R] and W_UK^T [H R, dn] with the same values.
  const std::vector<float> kv_b = random(static_cast<size_t>(H * (dn + dv) * R), 0.1f);
  std::vector<float> w_uk_t(static_cast<size_t>(H * R * dn));
  for (int32_t h = 0; h < H; ++h)
    for (int32_t r = 0; r < R; ++r)
      for (int32_t d = 0; d < dn; ++d)
        w_uk_t[static_cast<size_t>((h * R + r) * dn + d)] =
            kv_b[static_cast<size_t>((h * (dn + dv) + d) * R + r)];
  const Matrix kv_b_h{DType::kF32, H * (dn + dv), R, kv_b.data(), nullptr};
  const Matrix w_uk_h{DType::kF32, H * R, dn, w_uk_t.data(), nullptr};
  const Matrix kv_b_d = up_matrix(kv_b_h), w_uk_d = up_matrix(w_uk_h);
  const std::vector<float> q = random(static_cast<size_t>(4 * H * d_qk));
  // The selection: token t attends to 5 positions <= its own (n_sel -1: all of them).
  const int32_t K = 5;
  const std::vector<int32_t> sel = {0, 3, 9,  20, 36, 1, 2, 17, 30, 38,
                                    4, 8, 15, 16, 39, 0, 5, 6,  7,  20};
  for (const bool sparse : {false, true}) {
    for (const DType dt : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
      SCOPED_TRACE(std::string(sparse ? "sparse " : "dense ") + kv_dtype_name(dt));
      const std::vector<int32_t> n_sel = {sparse ? K : -1, sparse ? K : -1, -1, sparse ? K : -1};
      TwoCaches c =
          make_caches(*gpu_, cpu_, *gpu_scratch_, KvLayout{1, R, dr, P, 0, dt}, 6, slots, rng_);
      MlaAttnArgs a;
      a.shape = {H, dn, dr, dv, R, 0.125f};
      a.i_layer = 0;
      a.batch = &b;
      a.attended = {sparse ? sel.data() : nullptr, n_sel.data(), sparse ? K : 0};
      // CPU: the naive form for sequence 0, the absorbed one for sequence 1; then the absorbed
      // form for all four tokens at once.
      std::vector<float> q_cpu = q, want(static_cast<size_t>(4 * H * dv)), want_abs = want;
      a.kv_b = &kv_b_h;
      a.w_uk_t = &w_uk_h;
      a.kv = &c.host;
      a.q = q_cpu.data();
      a.attn = want.data();
      cpu_.mla_prefill(a, 0, *cpu_scratch_);
      const int32_t toks[4] = {0, 1, 2, 3}, seqs[4] = {0, 0, 0, 1};
      cpu_.mla_decode(a, toks + 3, seqs + 3, 1, *cpu_scratch_);
      a.attn = want_abs.data();
      cpu_.mla_decode(a, toks, seqs, 4, *cpu_scratch_);
      // CUDA, the same calls.
      gpu_->begin_forward(b, *gpu_scratch_);
      a.kv_b = &kv_b_d;
      a.w_uk_t = &w_uk_d;
      a.kv = &c.dev;
      a.q = up(q.data(), q.size());
      if (sparse) a.attended = {up(sel.data(), sel.size()), up(n_sel.data(), n_sel.size()), K};
      float* got = up(want.data(), want.size());
      a.attn = got;
      gpu_->mla_prefill(a, 0, *gpu_scratch_);
      gpu_->mla_decode(a, toks + 3, seqs + 3, 1, *gpu_scratch_);
      expect_close_rel(down(got, want.size()), want, 2e-5);
      float* got_abs = up(want.data(), want.size());
      a.attn = got_abs;
      gpu_->mla_decode(a, toks, seqs, 4, *gpu_scratch_);
      expect_close_rel(down(got_abs, want.size()), want_abs, 2e-5);
    }
  }
}

// The V3.2 indexer's keys and queries (LayerNorm, rope, Hadamard, UE8M0 e4m3) against the CPU (a
// value may land on the neighbouring e4m3 code where the two LayerNorms differ in the last bit).
TEST_F(CudaOps, IndexerKeysAndQueries) {
  const int32_t T = 3, HI = cfg_.index_n_heads, D = cfg_.index_head_dim, dr = cfg_.d_rope;
  const int32_t R = cfg_.kv_lora_rank, d_row = R + dr + D + 1;
  const std::vector<int32_t> pos = {37, 38, 39};
  std::vector<float> freqs(static_cast<size_t>(dr / 2));
  for (size_t i = 0; i < freqs.size(); ++i) freqs[i] = std::pow(10000.0f, -2.0f * i / dr);
  const std::vector<float> k = random(static_cast<size_t>(T * D), 2.0f);
  const std::vector<float> q = random(static_cast<size_t>(T * HI * D));
  const std::vector<float> coef = random(static_cast<size_t>(T * HI));
  const std::vector<float> nw = random(static_cast<size_t>(D)), nb = random(static_cast<size_t>(D));
  IndexerRopeArgs a;
  a.n_tok = T;
  a.n_heads = HI;
  a.head_dim = D;
  a.d_rope = dr;
  a.positions = pos.data();
  a.rope_freqs = freqs.data();
  a.k_norm_w = nw.data();
  a.k_norm_b = nb.data();
  a.d_row = d_row;
  a.key_offset = R + dr;
  std::vector<float> k_cpu = k, q_cpu = q, c_cpu = coef, rows_cpu(static_cast<size_t>(T * d_row));
  a.k = k_cpu.data();
  a.q = q_cpu.data();
  a.coef = c_cpu.data();
  a.rows = rows_cpu.data();
  cpu_.indexer_rope_quant(a, *cpu_scratch_);
  ForwardBatch b;
  b.positions = pos;
  gpu_->begin_forward(b, *gpu_scratch_);
  for (const std::vector<float>* v :
       std::initializer_list<const std::vector<float>*>{&freqs, &nw, &nb})
    gpu_->mirror_constant(v->data(), v->size());
  a.k = up(k.data(), k.size());
  a.q = up(q.data(), q.size());
  a.coef = up(coef.data(), coef.size());
  a.rows = up(rows_cpu.data(), rows_cpu.size());
  gpu_->indexer_rope_quant(a, *gpu_scratch_);
  auto within_a_code = [](const std::vector<float>& got, const std::vector<float>& want) {
    int n_off = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      n_off += got[i] != want[i];
      EXPECT_LE(std::fabs(got[i] - want[i]), 0.125f * std::fabs(want[i]) + 1e-6f) << i;
    }
    return n_off;
  };
  EXPECT_LE(within_a_code(down(a.q, q.size()), q_cpu), 8);
  EXPECT_LE(within_a_code(down(a.rows, rows_cpu.size()), rows_cpu), 4);
  expect_close_rel(down(a.coef, coef.size()), c_cpu, 1e-5);
}

// The indexer's top-k over a cache of e4m3 keys (one sequence of 40 cached positions on pages 2,
// 0, 1, its last 3 tokens): the same positions as the CPU's.
TEST_F(CudaOps, IndexerSelectionAgainstTheCpu) {
  const int32_t T = 3, HI = cfg_.index_n_heads, D = cfg_.index_head_dim, dr = cfg_.d_rope;
  const int32_t R = cfg_.kv_lora_rank;
  const std::vector<int32_t> pos = {37, 38, 39};
  const std::vector<float> c_cpu = random(static_cast<size_t>(T * HI));
  ForwardBatch b;
  b.positions = pos;
  const std::vector<int32_t> pages = {2, 0, 1};
  std::vector<int32_t> slots;
  for (int32_t p = 0; p < 40; ++p)
    slots.push_back(pages[static_cast<size_t>(p / 16)] * 16 + p % 16);
  TwoCaches c = make_caches(*gpu_, cpu_, *gpu_scratch_, KvLayout{1, R, dr, 16, D, DType::kBF16}, 3,
                            slots, rng_);
  const std::vector<int32_t> tokens = {7, 8, 9}, begin = {0, 3}, kv_len = {40};
  b.tokens = tokens;
  b.seq_token_begin = begin;
  b.seq_kv_len = kv_len;
  b.page_table = pages;
  b.max_pages = 3;
  const int32_t K = cfg_.index_topk;
  std::vector<float> q_sel(static_cast<size_t>(T * HI * D));  // e4m3 values, as the model's
  for (float& x : q_sel) x = fp8e4m3_to_f32(f32_to_fp8e4m3(rng_.normal()));
  IndexerSelectArgs s;
  s.i_layer = 0;
  s.batch = &b;
  s.i_seq = 0;
  s.n_heads = HI;
  s.head_dim = D;
  s.topk = K;
  std::vector<int32_t> sel_cpu(static_cast<size_t>(T * K)), n_cpu(T);
  s.kv = &c.host;
  s.q = q_sel.data();
  s.coef = c_cpu.data();
  s.sel = sel_cpu.data();
  s.n_sel = n_cpu.data();
  cpu_.indexer_select(s, *cpu_scratch_);
  gpu_->begin_forward(b, *gpu_scratch_);
  s.kv = &c.dev;
  s.q = up(q_sel.data(), q_sel.size());
  s.coef = up(c_cpu.data(), c_cpu.size());
  int32_t* sel_dev = up(sel_cpu.data(), sel_cpu.size());
  int32_t* n_dev = up(n_cpu.data(), n_cpu.size());
  s.sel = sel_dev;
  s.n_sel = n_dev;
  gpu_->indexer_select(s, *gpu_scratch_);
  EXPECT_EQ(down_i32(n_dev, n_cpu.size()), n_cpu);
  EXPECT_EQ(down_i32(sel_dev, sel_cpu.size()), sel_cpu);
}

// One MoE layer (8 experts, 2 per token, one shared, FP8): the same experts chosen (the router
// logits differ only by summation order; random logits have no near-ties here) and the output
// within the bound of its sums.
TEST_F(CudaOps, MoeAgainstTheCpu) {
  ModelConfig c = cfg_;
  c.n_shared_experts = 1;
  const int32_t T = 5, E = c.n_experts, d = c.d_model;
  test::RandomMatrix router = test::random_matrix(DType::kF32, E, d, rng_);
  const std::vector<float> bias = random(static_cast<size_t>(E), 0.1f);
  std::vector<test::RandomMatrix> keep;
  std::vector<FfnWeights> experts_h, experts_d;
  auto ffn = [&](int32_t width) {
    keep.push_back(test::random_matrix(DType::kF8E4M3, width, d, rng_));
    keep.push_back(test::random_matrix(DType::kF8E4M3, width, d, rng_));
    keep.push_back(test::random_matrix(DType::kF8E4M3, d, width, rng_));
    const size_t n = keep.size();
    return FfnWeights{keep[n - 3].m, keep[n - 2].m, keep[n - 1].m};
  };
  keep.reserve(3 * static_cast<size_t>(E + 1));
  for (int32_t e = 0; e < E; ++e) experts_h.push_back(ffn(c.d_ff_expert));
  const FfnWeights shared_h = ffn(c.d_ff_expert);
  for (const FfnWeights& f : experts_h)
    experts_d.push_back({up_matrix(f.gate), up_matrix(f.up), up_matrix(f.down)});
  const FfnWeights shared_d{up_matrix(shared_h.gate), up_matrix(shared_h.up),
                            up_matrix(shared_h.down)};
  const Matrix router_d = up_matrix(router.m);
  const std::vector<float> x = random(static_cast<size_t>(T * d), 0.05f);
  MoeArgs a;
  a.cfg = &c;
  a.router_bias = bias.data();  // host memory on both backends
  a.expert_end = E;
  a.n_tok = T;
  std::vector<float> want(x.size());
  std::vector<int32_t> sel_cpu(static_cast<size_t>(T * c.n_experts_per_tok));
  int64_t reads_cpu = 0, reads_gpu = 0;
  a.router = &router.m;
  a.experts = experts_h.data();
  a.shared = &shared_h;
  a.x = x.data();
  a.out = want.data();
  a.sel_experts = sel_cpu.data();
  a.routed_expert_reads = &reads_cpu;
  auto cpu_scratch = cpu_.make_scratch(c, lim_);
  cpu_.moe(a, *cpu_scratch);
  auto gpu_scratch = gpu_->make_scratch(c, lim_);
  a.router = &router_d;
  a.experts = experts_d.data();
  a.shared = &shared_d;
  a.x = up(x.data(), x.size());
  float* out = up(want.data(), want.size());
  a.out = out;
  int32_t* sel_dev = up(sel_cpu.data(), sel_cpu.size());
  a.sel_experts = sel_dev;
  a.routed_expert_reads = &reads_gpu;
  gpu_->moe(a, *gpu_scratch);
  expect_close_rel(down(out, want.size()), want, 1e-5);
  EXPECT_EQ(down_i32(sel_dev, sel_cpu.size()), sel_cpu);
  EXPECT_EQ(reads_gpu, reads_cpu);
}

}  // namespace
}  // namespace dss
