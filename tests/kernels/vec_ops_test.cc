// kernels/cpu vector primitives vs kernels/ref on every compiled Highway target this CPU
// supports, on lengths around the vector width (tails included). Tolerance: relative 1e-5
// (Highway's Exp is accurate to a few ulp; sums differ only in order).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/kernels/vec_ops_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "kernels/cpu/vec_ops-inl.h"

#ifndef DSS_TESTS_KERNELS_VEC_OPS_TEST_HELPERS_
#define DSS_TESTS_KERNELS_VEC_OPS_TEST_HELPERS_
#include "base/rng.h"
#include "kernels/ref/ref_kernels.h"
namespace dss::test {
inline std::vector<float> randn(int64_t n, dss::Rng& rng, float scale = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = rng.normal() * scale;
  return v;
}
inline const int64_t kLengths[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 64, 100, 129, 512, 1000};
}  // namespace dss::test
#endif

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {

void TestDotAxpy() {
  Rng rng(1);
  for (int64_t n : test::kLengths) {
    auto a = test::randn(n, rng), b = test::randn(n, rng);
    const double want = ref::dot(a.data(), b.data(), n);
    EXPECT_NEAR(Dot(a.data(), b.data(), n), want,
                1e-5 * (std::sqrt(static_cast<double>(n)) + std::abs(want)))
        << n;
    auto y = b;
    Axpy(0.75f, a.data(), y.data(), n);
    // One rounding (fma) where the target has FMA, else a product and a sum (the kernels and
    // this test are compiled without implicit contraction).
    for (int64_t i = 0; i < n; ++i) {
      const float want_i = HWY_NATIVE_FMA ? std::fma(0.75f, a[i], b[i]) : b[i] + 0.75f * a[i];
      EXPECT_EQ(y[i], want_i) << n << " " << i;
    }
  }
}

void TestRmsNorm() {
  Rng rng(2);
  for (DType wt : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (int64_t n : test::kLengths) {
      auto x = test::randn(n, rng, 3.0f);
      std::vector<uint8_t> wbytes(static_cast<size_t>(n) * dtype_size(wt));
      for (int64_t i = 0; i < n; ++i) {
        const float v = 1.0f + 0.1f * rng.normal();
        if (wt == DType::kF32) std::memcpy(wbytes.data() + 4 * i, &v, 4);
        if (wt == DType::kBF16) {
          const uint16_t h = f32_to_bf16(v);
          std::memcpy(wbytes.data() + 2 * i, &h, 2);
        }
        if (wt == DType::kF16) {
          const uint16_t h = f32_to_f16(v);
          std::memcpy(wbytes.data() + 2 * i, &h, 2);
        }
      }
      const Vector w{wt, n, wbytes.data()};
      std::vector<float> y(static_cast<size_t>(n)), r(static_cast<size_t>(n));
      RmsNorm(x.data(), w, n, 1e-6f, y.data());
      ref::rmsnorm(x.data(), w, n, 1e-6f, r.data());
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], r[i], 1e-5f * (1.0f + std::abs(r[i]))) << n;
      RmsNorm(x.data(), w, n, 1e-6f, x.data());  // in place
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(x[i], r[i], 1e-5f * (1.0f + std::abs(r[i])));
    }
  }
}

void TestSiluMulSoftmax() {
  Rng rng(3);
  for (int64_t n : test::kLengths) {
    auto g = test::randn(n, rng, 4.0f), u = test::randn(n, rng);
    std::vector<float> y(static_cast<size_t>(n)), r(static_cast<size_t>(n));
    SiluMul(g.data(), u.data(), n, y.data());
    ref::silu_mul(g.data(), u.data(), n, r.data());
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], r[i], 1e-5f * (1.0f + std::abs(r[i]))) << n;
    auto s = test::randn(n, rng, 10.0f), sr = s;
    Softmax(s.data(), n);
    ref::softmax(sr.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(s[i], sr[i], 1e-6f + 1e-5f * sr[i]) << n;
  }
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace dss::cpu {
HWY_BEFORE_TEST(VecOpsTest);
HWY_EXPORT_AND_TEST_P(VecOpsTest, TestDotAxpy);
HWY_EXPORT_AND_TEST_P(VecOpsTest, TestRmsNorm);
HWY_EXPORT_AND_TEST_P(VecOpsTest, TestSiluMulSoftmax);
}  // namespace dss::cpu
#endif
