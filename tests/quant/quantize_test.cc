// tensor/quantize: INT8 per-channel and FP8 block quantisation bounds, derived from the formats
// (not from measured outputs), and the exact FP8 -> BF16 dequantisation rule.
#include "tensor/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/rng.h"

namespace dss {
namespace {

std::vector<float> randn(int64_t n, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = rng.normal() * (rng.uniform() < 0.01f ? 30.0f : 1.0f);  // some outliers
  return v;
}

// INT8: s_r = amax_r / 127 and q = rne(w / s_r), so |q * s_r - w| <= s_r / 2 (plus one f32
// rounding of w / s_r and of the product, < 2^-22 relative), and the row maximum maps to +-127.
TEST(Quantize, Int8RowsWithinHalfAStep) {
  Rng rng(3);
  const int64_t R = 37, C = 300;
  auto w = randn(R * C, rng);
  for (int64_t c = 0; c < C; ++c) w[static_cast<size_t>(5 * C + c)] = 0.0f;  // an all-zero row
  std::vector<int8_t> q(w.size());
  std::vector<float> s(R);
  quantize_int8_rows(w.data(), R, C, q.data(), s.data());
  Matrix m{DType::kI8, R, C, q.data(), s.data()};
  for (int64_t r = 0; r < R; ++r) {
    int max_q = 0;
    for (int64_t c = 0; c < C; ++c) {
      const float x = w[static_cast<size_t>(r * C + c)];
      EXPECT_LE(std::fabs(m.at(r, c) - x), s[r] * 0.5f * (1.0f + 1e-6f) + 1e-30f) << r << "," << c;
      max_q = std::max(max_q, std::abs(static_cast<int>(q[static_cast<size_t>(r * C + c)])));
    }
    EXPECT_EQ(max_q, r == 5 ? 0 : 127) << r;
  }
}

// FP8 block round trip of BF16 input back to BF16. With s the block scale and v = x / s, e4m3
// rounding (3 mantissa bits, RNE) errs by at most 2^-4 |v| for |v| >= 2^-6 (normal) and 2^-10
// (half the subnormal step 2^-9) below; the f32 product q * s adds <= 2^-24 relative and the final
// BF16 rounding <= 2^-9 relative. Hence |y - x| <= 2^-4 |x| (1 + 2^-9 + 2^-23) + 2^-10 s
// (1 + 2^-9) + tiny, bounded by (2^-4 + 2^-8) |x| + 2^-9 s. Truncation instead of RNE would
// exceed it (up to 2^-3 |x|), so the bound has teeth; we also check it is nearly attained.
TEST(Quantize, Fp8BlockRoundTripBound) {
  Rng rng(4);
  const int64_t R = 200, C = 300;  // ragged edge blocks in both directions
  auto w = randn(R * C, rng);
  for (auto& x : w) x = bf16_to_f32(f32_to_bf16(x));  // BF16 input
  std::vector<uint16_t> wb(w.size());
  for (size_t i = 0; i < w.size(); ++i) wb[i] = f32_to_bf16(w[i]);
  const Matrix src{DType::kBF16, R, C, wb.data(), nullptr};
  for (bool ue8m0 : {false, true}) {
    const OwnedMatrix f8 = convert_matrix(src, DType::kF8E4M3, ue8m0);
    const Matrix fm = f8.view();
    const OwnedMatrix back = convert_matrix(fm, DType::kBF16, false);
    const Matrix bm = back.view();
    double worst_rel = 0.0;
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t c = 0; c < C; ++c) {
        const float x = w[static_cast<size_t>(r * C + c)], y = bm.at(r, c);
        const float s = fm.scales[(r / 128) * fm.n_scale_cols() + c / 128];
        EXPECT_LE(std::fabs(y - x), (1.0f / 16 + 1.0f / 256) * std::fabs(x) + s / 512)
            << r << "," << c << " ue8m0 " << ue8m0;
        if (std::fabs(x) > 4 * s)
          worst_rel = std::max(worst_rel, static_cast<double>(std::fabs(y - x) / std::fabs(x)));
        // BF16 of an e4m3 value times s equals the exact dequantised product rounded once.
        EXPECT_EQ(f32_to_bf16(fm.at(r, c)),
                  reinterpret_cast<const uint16_t*>(back.data.data())[r * C + c]);
      }
    }
    EXPECT_GT(worst_rel, 1.0 / 64) << "quantisation too gentle: is FP8 really applied?";
    if (ue8m0) {
      for (float s : f8.scales) EXPECT_EQ(std::exp2(std::round(std::log2(s))), s);
    }
  }
}

TEST(Quantize, SameDtypeIsCopiedUnchanged) {
  std::vector<uint8_t> codes = {1, 2, 3, 0x80, 0x7E, 9};
  std::vector<float> scales = {0.5f};
  const Matrix m{DType::kF8E4M3, 2, 3, codes.data(), scales.data()};
  const OwnedMatrix o = convert_matrix(m, DType::kF8E4M3, true);
  EXPECT_EQ(o.data, codes);
  EXPECT_EQ(o.scales, scales);
}

}  // namespace
}  // namespace dss
