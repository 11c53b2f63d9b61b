// The V3.2 reference's FP8 steps and the rope rotations (kernels/cpu/fp8_sim.h, rope.h) against
// closed forms: the Walsh-Hadamard matrix entry (-1)^popcount(i & j) / sqrt(n), LayerNorm in
// double, UE8M0 scales 2^ceil(log2(amax / 448)) with e4m3 round-to-nearest-even codes, angles
// float32(pos) * f.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

#include "kernels/cpu/fp8_sim.h"
#include "kernels/cpu/rope.h"

namespace dss::cpu {
namespace {

TEST(Fp8Sim, HadamardIsTheSylvesterMatrixScaled) {
  constexpr int n = 16;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = 0.25f * static_cast<float>(i * i % 7) - 0.5f;
  std::vector<float> y = x;
  hadamard_transform(y.data(), n);
  for (int i = 0; i < n; ++i) {
    double want = 0.0;
    for (int j = 0; j < n; ++j) want += (std::popcount(unsigned(i & j)) % 2 ? -1.0 : 1.0) * x[j];
    EXPECT_NEAR(y[i], want / std::sqrt(double{n}), 1e-6) << i;
  }
}

TEST(Fp8Sim, LayerNormMatchesDouble) {
  constexpr int n = 8;
  const float x[n] = {1.0f, -2.0f, 0.5f, 3.0f, 0.0f, -1.5f, 2.25f, 4.0f};
  float w[n], b[n], y[n];
  for (int i = 0; i < n; ++i) w[i] = 1.0f + 0.1f * i, b[i] = -0.05f * i;
  layer_norm(x, w, b, n, 1e-6f, y);
  double mean = 0.0, var = 0.0;
  for (float v : x) mean += v;
  mean /= n;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= n;
  for (int i = 0; i < n; ++i)
    EXPECT_NEAR(y[i], (x[i] - mean) / std::sqrt(var + 1e-6) * w[i] + b[i], 1e-5) << i;
}

TEST(Fp8Sim, ActQuantUe8m0ScaleAndRoundToNearestEven) {
  // amax 3: s = 2^ceil(log2(3 / 448)) = 2^-7. x / s: 128 and 384 are e4m3 values; 136 lies
  // halfway between 128 and 144 (step 16 in [128, 256)) and rounds to the even code, 128;
  // 140 rounds to 144.
  const float x[4] = {1.0f, 3.0f, 136.0f / 128.0f, -140.0f / 128.0f};
  float q[4];
  const float s = act_quant_ue8m0(x, 4, q);
  EXPECT_EQ(s, std::ldexp(1.0f, -7));
  EXPECT_EQ(q[0], 128.0f);
  EXPECT_EQ(q[1], 384.0f);
  EXPECT_EQ(q[2], 128.0f);
  EXPECT_EQ(q[3], -144.0f);
  // All zeros: amax clamps to 1e-4, s = 2^ceil(log2(1e-4 / 448)) = 2^-22, codes zero.
  const float z[2] = {0.0f, 0.0f};
  EXPECT_EQ(act_quant_ue8m0(z, 2, q), std::ldexp(1.0f, -22));
  EXPECT_EQ(q[0], 0.0f);
}

TEST(Rope, AnglesAreFloat32ProductsAndHalfSplitPairsIAndIPlusHalf) {
  const float freqs[2] = {1.0f, 0.01f};
  float c[2], s[2];
  rope_angles(freqs, 2, 7, c, s);
  for (int i = 0; i < 2; ++i) {
    const float a = 7.0f * freqs[i];
    EXPECT_EQ(c[i], static_cast<float>(std::cos(double{a})));
    EXPECT_EQ(s[i], static_cast<float>(std::sin(double{a})));
  }
  float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};  // pairs (1, 3) and (2, 4)
  rope_rotate_half_split(x, 2, c, s);
  EXPECT_NEAR(x[0], 1 * c[0] - 3 * s[0], 1e-6f);
  EXPECT_NEAR(x[2], 1 * s[0] + 3 * c[0], 1e-6f);
  EXPECT_NEAR(x[1], 2 * c[1] - 4 * s[1], 1e-6f);
  EXPECT_NEAR(x[3], 2 * s[1] + 4 * c[1], 1e-6f);
}

}  // namespace
}  // namespace dss::cpu
