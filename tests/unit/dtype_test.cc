// Scalar dtype conversions against their definitions (IEEE / OCP FP8 e4m3fn spec).
#include "tensor/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace dss {
namespace {

TEST(Fp8E4M3, DecodesKnownCodes) {
  EXPECT_EQ(fp8e4m3_to_f32(0x00), 0.0f);
  EXPECT_EQ(fp8e4m3_to_f32(0x38), 1.0f);    // exp 7 (bias 7), mantissa 0
  EXPECT_EQ(fp8e4m3_to_f32(0x7E), 448.0f);  // max finite
  EXPECT_EQ(fp8e4m3_to_f32(0xFE), -448.0f);
  EXPECT_EQ(fp8e4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // smallest subnormal (1/8 * 2^-6)
  EXPECT_EQ(fp8e4m3_to_f32(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(fp8e4m3_to_f32(0x07), 7.0f / 8.0f * std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(fp8e4m3_to_f32(0x7F)));
  EXPECT_TRUE(std::isnan(fp8e4m3_to_f32(0xFF)));
}

TEST(Fp8E4M3, EncodeRoundTripsEveryFiniteCode) {
  for (int v = 0; v < 256; ++v) {
    if ((v & 0x7F) == 0x7F) continue;
    const float f = fp8e4m3_to_f32(static_cast<uint8_t>(v));
    const uint8_t back = f32_to_fp8e4m3(f);
    if (f == 0.0f) {
      EXPECT_EQ(back & 0x7F, 0);
    } else {
      EXPECT_EQ(back, v) << "code " << v << " value " << f;
    }
  }
}

TEST(Fp8E4M3, RoundsToNearestEvenAndSaturates) {
  // Between 1.0 (0x38) and 1.125 (0x39): the midpoint 1.0625 ties to the even code 0x38.
  EXPECT_EQ(f32_to_fp8e4m3(1.0625f), 0x38);
  EXPECT_EQ(f32_to_fp8e4m3(1.07f), 0x39);
  // 1.1875 is the midpoint of 1.125 (0x39, odd) and 1.25 (0x3A, even).
  EXPECT_EQ(f32_to_fp8e4m3(1.1875f), 0x3A);
  EXPECT_EQ(f32_to_fp8e4m3(1000.0f), 0x7E);
  EXPECT_EQ(f32_to_fp8e4m3(-1000.0f), 0xFE);
  EXPECT_EQ(f32_to_fp8e4m3(std::ldexp(1.0f, -10)), 0x00);  // half the smallest subnormal: tie to 0
  EXPECT_EQ(f32_to_fp8e4m3(std::ldexp(1.5f, -10)), 0x01);
  // Every value decodes to the nearest grid point: brute-force check over a fine sweep.
  for (float x = -460.0f; x <= 460.0f; x += 0.0371f) {
    const float q = fp8e4m3_to_f32(f32_to_fp8e4m3(x));
    float best = 1e30f;
    for (int v = 0; v < 256; ++v) {
      const float g = fp8e4m3_to_f32(static_cast<uint8_t>(v));
      if (!std::isnan(g)) best = std::min(best, std::fabs(g - std::clamp(x, -448.0f, 448.0f)));
    }
    ASSERT_EQ(std::fabs(q - std::clamp(x, -448.0f, 448.0f)), best) << x;
  }
}

// The definition (nearest finite e4m3 value, ties to the even code, |x| >= 448 saturates, NaN ->
// 0x7F) at every boundary of the grid: each grid value, the f32 values next to it, and around
// each midpoint between neighbours (the midpoint itself and one f32 ulp either side), both signs;
// plus infinities, f32 subnormals and the largest finite f32.
TEST(Fp8E4M3, EncodesEveryGridBoundaryAsDefined) {
  std::vector<std::pair<float, uint8_t>> grid;  // non-negative finite values, ascending
  for (int v = 0; v < 0x7F; ++v) grid.emplace_back(fp8e4m3_to_f32(static_cast<uint8_t>(v)), v);
  auto nearest = [&](float x) -> uint8_t {  // |x| <= 448, by search over the grid
    const float a = std::fabs(x);
    uint8_t best = 0;
    float best_d = std::numeric_limits<float>::infinity();
    for (const auto& [g, code] : grid) {
      const float d = std::fabs(g - a);
      if (d < best_d || (d == best_d && (code & 1) == 0)) {
        best_d = d;
        best = code;
      }
    }
    return static_cast<uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
  };
  std::vector<float> xs = {0.0f, std::numeric_limits<float>::denorm_min(),
                           std::numeric_limits<float>::min(), 447.99997f, 448.0f};
  for (size_t i = 0; i < grid.size(); ++i) {
    const float g = grid[i].first;
    xs.push_back(g);
    xs.push_back(std::nextafter(g, 0.0f));
    xs.push_back(std::nextafter(g, 1000.0f));
    if (i + 1 < grid.size()) {
      const float mid = 0.5f * (g + grid[i + 1].first);  // exact: neighbours share a binade step
      xs.push_back(mid);
      xs.push_back(std::nextafter(mid, 0.0f));
      xs.push_back(std::nextafter(mid, 1000.0f));
    }
  }
  for (const float x : xs) {
    for (const float v : {x, -x}) {
      if (std::fabs(v) > 448.0f) continue;
      EXPECT_EQ(f32_to_fp8e4m3(v), nearest(v)) << v;
    }
  }
  EXPECT_EQ(f32_to_fp8e4m3(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(f32_to_fp8e4m3(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(f32_to_fp8e4m3(std::numeric_limits<float>::max()), 0x7E);
  EXPECT_EQ(f32_to_fp8e4m3(448.00003f), 0x7E);
  EXPECT_EQ(f32_to_fp8e4m3(std::nanf("")), 0x7F);
  EXPECT_EQ(f32_to_fp8e4m3(-std::nanf("")), 0x7F);
  EXPECT_EQ(f32_to_fp8e4m3(-0.0f), 0x80);
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81);
}

TEST(F16, ConvertsBothWays) {
  EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    ASSERT_EQ(f32_to_f16(f16_to_f32(static_cast<uint16_t>(h))), h);
  }
}

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16, DType::kF8E4M3, DType::kI8, DType::kU8,
                  DType::kI32, DType::kI64}) {
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  }
  EXPECT_FALSE(dtype_from_name("F8_E5M2").has_value());
}

}  // namespace
}  // namespace dss
