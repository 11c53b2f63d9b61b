// cuBLASLt GEMMs (kernels/cuda/blaslt_gemm.h) against a scalar double-precision reference computed
// from the same (dequantised) values: BF16 and FP8 with 128x128 weight / 1x128 activation scales,
// on T = 1, 7 (8-token tail only), 64, 517 (main + tail), 4096 and ragged N and K. Skipped when no
// CUDA device is present (CI runs without a GPU); the scale-repack helper runs everywhere.
#include "kernels/cuda/blaslt_gemm.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/rng.h"
#include "kernels/cuda/fp8_gemv.h"
#include "tensor/dtype.h"

namespace dss {
namespace {

int64_t ceil128(int64_t n) { return (n + 127) / 128; }

// Device copy of a host vector (freed at scope exit).
template <typename T>
struct DeviceVec {
  T* p = nullptr;
  size_t n = 0;
  explicit DeviceVec(const std::vector<T>& host) : n(host.size()) {
    alloc();
    EXPECT_EQ(cudaMemcpy(p, host.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  explicit DeviceVec(size_t count) : n(count) {
    alloc();
    EXPECT_EQ(cudaMemset(p, 0xFF, n * sizeof(T)), cudaSuccess);  // NaN floats: catch unwritten y
  }
  ~DeviceVec() { cudaFree(p); }
  void alloc() {
    void* raw = nullptr;
    EXPECT_EQ(cudaMalloc(&raw, n * sizeof(T)), cudaSuccess);
    p = static_cast<T*>(raw);
  }
  DeviceVec(const DeviceVec&) = delete;
  DeviceVec& operator=(const DeviceVec&) = delete;
  std::vector<T> download() const {
    std::vector<T> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
};

std::unique_ptr<cuda::BlasLt> make_blaslt() {
  cuda::BlasLtConfig cfg;
  cfg.max_tokens = 4096;
  cfg.max_rows = 1024;
  cfg.max_cols = 2048;
  auto r = cuda::BlasLt::create(cfg);
  EXPECT_TRUE(r.is_ok()) << r.message();
  return r.is_ok() ? std::move(r).value() : nullptr;
}

void expect_bf16_matches(cuda::BlasLt& lt, int64_t t, int64_t n, int64_t k) {
  SCOPED_TRACE(testing::Message() << "bf16 T=" << t << " N=" << n << " K=" << k);
  Rng rng(static_cast<uint64_t>(t * 1000003 + n * 1009 + k));
  std::vector<uint16_t> w(static_cast<size_t>(n * k)), x(static_cast<size_t>(t * k));
  for (auto& v : w) v = f32_to_bf16(2.0f * rng.uniform() - 1.0f);
  for (auto& v : x) v = f32_to_bf16(2.0f * rng.uniform() - 1.0f);
  const DeviceVec<uint16_t> dw(w), dx(x);
  DeviceVec<float> dy(static_cast<size_t>(t * n));
  const Status s = lt.gemm_bf16(dw.p, dx.p, dy.p, t, n, k, nullptr);
  ASSERT_TRUE(s.is_ok()) << s.message();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> y = dy.download();
  double max_err = 0.0, max_ref = 0.0;
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t r = 0; r < n; ++r) {
      double ref = 0.0;
      for (int64_t c = 0; c < k; ++c)
        ref += static_cast<double>(bf16_to_f32(x[static_cast<size_t>(i * k + c)])) *
               bf16_to_f32(w[static_cast<size_t>(r * k + c)]);
      const double got = y[static_cast<size_t>(i * n + r)];
      ASSERT_TRUE(std::isfinite(got)) << "y[" << i << ", " << r << "]";
      max_err = std::max(max_err, std::fabs(got - ref));
      max_ref = std::max(max_ref, std::fabs(ref));
    }
  }
  // Inputs are exact bf16 values; only f32 accumulation order differs.
  EXPECT_LE(max_err / max_ref, 1e-2) << "max_err=" << max_err << " max_ref=" << max_ref;
}

// Random e4m3 codes (no NaN) spread over the whole range via the repo's encoder.
std::vector<uint8_t> random_fp8(size_t count, Rng& rng) {
  std::vector<uint8_t> v(count);
  for (auto& b : v) b = f32_to_fp8e4m3((2.0f * rng.uniform() - 1.0f) * kFp8E4M3Max);
  return v;
}

std::vector<float> random_scales(size_t count, Rng& rng) {
  std::vector<float> v(count);
  for (auto& s : v) s = 1e-3f + rng.uniform();
  return v;
}

void expect_fp8_matches(cuda::BlasLt& lt, int64_t t, int64_t n, int64_t k) {
  SCOPED_TRACE(testing::Message() << "fp8_block T=" << t << " N=" << n << " K=" << k);
  Rng rng(static_cast<uint64_t>(t * 7919 + n * 31 + k));
  const int64_t kb = ceil128(k);
  const std::vector<uint8_t> w = random_fp8(static_cast<size_t>(n * k), rng);
  const std::vector<uint8_t> x = random_fp8(static_cast<size_t>(t * k), rng);
  const std::vector<float> sw = random_scales(static_cast<size_t>(ceil128(n) * kb), rng);
  const std::vector<float> sx = random_scales(static_cast<size_t>(t * kb), rng);
  const DeviceVec<uint8_t> dw(w), dx(x);
  const DeviceVec<float> dsw(cuda::blaslt_weight_scales(sw, n, k)), dsx(sx);
  DeviceVec<float> dy(static_cast<size_t>(t * n));
  const Status s = lt.gemm_fp8_block(dw.p, dsw.p, dx.p, dsx.p, dy.p, t, n, k, nullptr);
  ASSERT_TRUE(s.is_ok()) << s.message();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> y = dy.download();
  int n_bad = 0;
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t r = 0; r < n; ++r) {
      double ref = 0.0, mag = 0.0;
      for (int64_t c = 0; c < k; ++c) {
        const double xv = static_cast<double>(fp8e4m3_to_f32(x[static_cast<size_t>(i * k + c)])) *
                          sx[static_cast<size_t>(i * kb + c / 128)];
        const double wv = static_cast<double>(fp8e4m3_to_f32(w[static_cast<size_t>(r * k + c)])) *
                          sw[static_cast<size_t>((r / 128) * kb + c / 128)];
        ref += xv * wv;
        mag += std::fabs(xv * wv);
      }
      const double got = y[static_cast<size_t>(i * n + r)];
      // Same fp8 codes and scales: only the accumulation order (and the tensor cores'
      // in-block accumulation) differs.
      if (!(std::fabs(got - ref) <= 1e-3 * mag + 1e-30) && ++n_bad <= 5)
        ADD_FAILURE() << "y[" << i << ", " << r << "] = " << got << " want " << ref
                      << " (sum |terms| " << mag << ")";
    }
  }
  EXPECT_EQ(n_bad, 0);
}

TEST(CudaBlasLt, WeightScalesArePaddedToFourColumns) {
  EXPECT_EQ(cuda::blaslt_weight_scale_cols(7168), 56);           // already a multiple of 4
  EXPECT_EQ(cuda::blaslt_weight_scale_cols(640), 8);             // 5 blocks -> 8
  const std::vector<float> s = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};  // [2, 5]: N=256, K=640
  const std::vector<float> p = cuda::blaslt_weight_scales(s, 256, 640);
  const std::vector<float> want = {1, 2, 3, 4, 5, 0, 0, 0, 6, 7, 8, 9, 10, 0, 0, 0};
  EXPECT_EQ(p, want);
  const std::vector<float> q(56 * 2, 1.5f);
  EXPECT_EQ(cuda::blaslt_weight_scales(q, 200, 7168), q);
}

TEST(CudaBlasLt, Bf16MatchesReference) {
  if (!cuda::device_present()) GTEST_SKIP() << "no CUDA device";
  auto lt = make_blaslt();
  ASSERT_NE(lt, nullptr);
  expect_bf16_matches(*lt, 1, 256, 512);
  expect_bf16_matches(*lt, 7, 384, 1024);
  expect_bf16_matches(*lt, 64, 512, 512);
  expect_bf16_matches(*lt, 64, 200, 648);  // ragged N and K
  expect_bf16_matches(*lt, 4096, 128, 256);
}

TEST(CudaBlasLt, Fp8BlockMatchesReference) {
  if (!cuda::device_present()) GTEST_SKIP() << "no CUDA device";
  auto lt = make_blaslt();
  ASSERT_NE(lt, nullptr);
  if (!lt->fp8_block_supported())
    GTEST_SKIP() << "cuBLASLt 1x128/128x128 block scaling needs sm_90";
  expect_fp8_matches(*lt, 1, 256, 512);    // tail GEMM only
  expect_fp8_matches(*lt, 7, 384, 1024);   // tail GEMM only
  expect_fp8_matches(*lt, 64, 512, 512);   // main GEMM only
  expect_fp8_matches(*lt, 517, 256, 768);  // main (512) + tail (5)
  expect_fp8_matches(*lt, 64, 200, 640);   // ragged N; 5 K-blocks: repacked weight scales
  expect_fp8_matches(*lt, 8, 136, 272);    // ragged N and a 16-column last K-block
  expect_fp8_matches(*lt, 4096, 128, 256);
}

TEST(CudaBlasLt, CachesPlansPerShape) {
  if (!cuda::device_present()) GTEST_SKIP() << "no CUDA device";
  auto lt = make_blaslt();
  ASSERT_NE(lt, nullptr);
  const int64_t t = 16, n = 128, k = 256;
  const DeviceVec<uint16_t> w(std::vector<uint16_t>(static_cast<size_t>(n * k), 0x3F80));
  const DeviceVec<uint16_t> x(std::vector<uint16_t>(static_cast<size_t>(t * k), 0x3F80));
  DeviceVec<float> y(static_cast<size_t>(t * n));
  ASSERT_TRUE(lt->gemm_bf16(w.p, x.p, y.p, t, n, k, nullptr).is_ok());
  ASSERT_TRUE(lt->gemm_bf16(w.p, x.p, y.p, t, n, k, nullptr).is_ok());
  EXPECT_EQ(lt->n_plans(), 1u);
  ASSERT_TRUE(lt->gemm_bf16(w.p, x.p, y.p, t / 2, n, k, nullptr).is_ok());
  EXPECT_EQ(lt->n_plans(), 2u);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (float v : y.download()) ASSERT_EQ(v, static_cast<float>(k));  // 1.0 * 1.0 summed K times
}

TEST(CudaBlasLt, RejectsUnsupportedShapes) {
  if (!cuda::device_present()) GTEST_SKIP() << "no CUDA device";
  auto lt = make_blaslt();
  ASSERT_NE(lt, nullptr);
  DeviceVec<uint16_t> buf(size_t{1} << 16);
  auto* f = reinterpret_cast<float*>(buf.p);
  const Status n_ragged = lt->gemm_bf16(buf.p, buf.p, f, 4, 100, 128, nullptr);
  EXPECT_FALSE(n_ragged.is_ok());
  EXPECT_NE(n_ragged.message().find("N=100"), std::string::npos) << n_ragged.message();
  EXPECT_FALSE(lt->gemm_bf16(buf.p, buf.p, f, 4, 128, 100, nullptr).is_ok());      // K % 8
  EXPECT_FALSE(lt->gemm_bf16(buf.p + 1, buf.p, f, 4, 128, 128, nullptr).is_ok());  // misaligned
  auto* b = reinterpret_cast<uint8_t*>(buf.p);
  EXPECT_FALSE(lt->gemm_fp8_block(b, f, b, f, f, 4, 128, 120, nullptr).is_ok());     // K % 16
  EXPECT_FALSE(lt->gemm_fp8_block(b, f, b, f, f, 5000, 128, 128, nullptr).is_ok());  // > max T
}

}  // namespace
}  // namespace dss
