// kernels/cpu act_quant_fp8 vs kernels/ref on every compiled Highway target this CPU supports:
// bit-identical outputs (both compute one division, one e4m3 rounding and one product per value,
// so any difference is a bug, not rounding noise). Inputs cover ragged last blocks, all-zero
// blocks (the 1e-4 floor), blocks whose small values fall into e4m3 subnormals, exact rounding
// ties (power-of-two scales make x / s exact), and both scale formats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/kernels/act_quant_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "kernels/cpu/act_quant-inl.h"

#ifndef DSS_TESTS_KERNELS_ACT_QUANT_TEST_HELPERS_
#define DSS_TESTS_KERNELS_ACT_QUANT_TEST_HELPERS_
#include "base/rng.h"
#include "kernels/ref/ref_kernels.h"
namespace dss::test {
// Row t of kind t % 4: normal, normal with one outlier (pushes the rest towards subnormals),
// zeros, exact e4m3 ties under a power-of-two scale.
inline std::vector<float> act_quant_input(int64_t n_tok, int64_t n_cols, Rng& rng) {
  std::vector<float> x(static_cast<size_t>(n_tok * n_cols));
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t c = 0; c < n_cols; ++c) {
      float& v = x[static_cast<size_t>(t * n_cols + c)];
      switch (t % 4) {
        case 0:
          v = rng.normal() * 3.0f;
          break;
        case 1:
          v = c % 128 == 5 ? 3000.0f : rng.normal() * 0.01f;
          break;
        case 2:
          v = 0.0f;
          break;
        default: {  // amax 448 * 2^-3 in every block -> ue8m0 scale 2^-3; x/s = odd/16 * 2^k
          const int k = static_cast<int>(rng.next_u64() % 8);
          const float mid = (16.0f + 2.0f * static_cast<float>(rng.next_u64() % 8) + 1.0f) / 16.0f;
          v = (c % 128 == 0)
                  ? 56.0f
                  : (rng.uniform() < 0.5f ? -1.0f : 1.0f) * mid * std::ldexp(1.0f, k - 3) * 0.125f;
        }
      }
    }
  }
  return x;
}
}  // namespace dss::test
#endif

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {

void TestActQuantMatchesRef() {
  Rng rng(77);
  const int64_t shapes[][2] = {{1, 1}, {4, 128}, {8, 64}, {5, 200}, {8, 384}, {3, 1000}, {4, 7}};
  for (bool ue8m0 : {false, true}) {
    for (const auto& sh : shapes) {
      const int64_t n_tok = sh[0], n_cols = sh[1];
      auto x = test::act_quant_input(n_tok, n_cols, rng);
      std::vector<float> want(x.size()), got(x.size());
      ref::act_quant_fp8(x.data(), n_tok, n_cols, ue8m0, want.data());
      ActQuantFp8(x.data(), n_tok, n_cols, ue8m0, got.data());
      int64_t n_bad = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        if (std::memcmp(&got[i], &want[i], 4) != 0 && n_bad++ < 3) {
          ADD_FAILURE() << "x=" << x[i] << " got " << got[i] << " want " << want[i] << " ue8m0 "
                        << ue8m0 << " " << n_tok << "x" << n_cols << " target "
                        << hwy::TargetName(HWY_TARGET);
        }
      }
      EXPECT_EQ(n_bad, 0);
      ActQuantFp8(x.data(), n_tok, n_cols, ue8m0, x.data());  // in place
      EXPECT_EQ(std::memcmp(x.data(), want.data(), 4 * x.size()), 0);
    }
  }
}

// Independent of the reference: with a power-of-two scale every output is an e4m3 value times s
// and within half an e4m3 step of the input (relative 2^-4 for normals, 2^-10 * s absolute).
void TestActQuantOnGridAndClose() {
  Rng rng(5);
  auto x = test::act_quant_input(8, 256, rng);
  std::vector<float> y(x.size());
  ActQuantFp8(x.data(), 8, 256, /*ue8m0=*/true, y.data());
  for (int64_t t = 0; t < 8; ++t) {
    for (int64_t b = 0; b < 2; ++b) {
      float amax = 1e-4f;
      for (int64_t c = b * 128; c < b * 128 + 128; ++c)
        amax = std::max(amax, std::fabs(x[static_cast<size_t>(t * 256 + c)]));
      const float s = std::exp2(std::ceil(std::log2(amax * (1.0f / 448.0f))));  // the contract
      for (int64_t c = b * 128; c < b * 128 + 128; ++c) {
        const float xv = x[static_cast<size_t>(t * 256 + c)],
                    yv = y[static_cast<size_t>(t * 256 + c)];
        const float code = yv / s;  // exact: s is a power of two
        EXPECT_EQ(fp8e4m3_to_f32(f32_to_fp8e4m3(code)), code) << "off grid: " << yv;
        EXPECT_LE(std::fabs(yv - xv), std::max(std::fabs(xv) / 16.0f, s / 1024.0f) * 1.0001f)
            << xv << " -> " << yv;
      }
    }
  }
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace dss::cpu {
HWY_BEFORE_TEST(ActQuantTest);
HWY_EXPORT_AND_TEST_P(ActQuantTest, TestActQuantMatchesRef);
HWY_EXPORT_AND_TEST_P(ActQuantTest, TestActQuantOnGridAndClose);
}  // namespace dss::cpu
#endif
