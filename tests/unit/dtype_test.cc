// Scalar dtype conversions against their definitions (IEEE / OCP FP8 e4m3fn spec).
#include "tensor/dtype.h"

#include <gtest/gtest.h>

#include <cmath>

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
