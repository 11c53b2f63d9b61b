// YaRN frequencies against the closed form in docs/deepseek-reference.md 2.4: for the 671B
// config pairs i <= 10 keep f_i, pairs i >= 23 are divided by 40 (correction range 10..23),
// in between a linear blend (i = 16: ramp 6/13, factor 1 - 6/13 * 39/40 ~ 0.55).
#include "model/deepseek/rope.h"

#include "kernels/cpu/rope.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dss {
namespace {

ModelConfig rope_config(int d, float factor, int l0) {
  ModelConfig c;
  c.d_rope = d;
  c.rope_theta = 10000.0f;
  c.rope.yarn = true;
  c.rope.factor = factor;
  c.rope.original_max_position = l0;
  return c;
}

TEST(Rope, YarnRampFor671B) {
  const RopeTable t(rope_config(64, 40.0f, 4096));
  ASSERT_EQ(t.n_pairs(), 32);
  for (int i = 0; i < 32; ++i) {
    const double f = std::pow(10000.0, -2.0 * i / 64.0);
    const double ramp = std::clamp((i - 10.0) / (23.0 - 10.0), 0.0, 1.0);
    const double want = f / 40.0 * ramp + f * (1.0 - ramp);
    EXPECT_NEAR(t.freqs()[i], want, want * 1e-6) << i;
  }
  EXPECT_NEAR(t.freqs()[16] / std::pow(10000.0, -32.0 / 64.0), 1.0 - 6.0 / 13.0 * (1 - 1.0 / 40.0),
              1e-6);
}

TEST(Rope, TinyV3CorrectionRangeIs0To3) {
  // Implementer's note 3: tiny-v3 (d 16, factor 4, L0 128) gives low 0, high 3.
  const RopeTable t(rope_config(16, 4.0f, 128));
  for (int i = 0; i < 8; ++i) {
    const double f = std::pow(10000.0, -2.0 * i / 16.0);
    const double ramp = std::clamp(i / 3.0, 0.0, 1.0);
    EXPECT_NEAR(t.freqs()[i], f / 4.0 * ramp + f * (1.0 - ramp), f * 1e-6) << i;
  }
}

TEST(Rope, InterleavedRotationIsAComplexProduct) {
  float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  const float c[2] = {std::cos(0.5f), std::cos(1.5f)}, s[2] = {std::sin(0.5f), std::sin(1.5f)};
  cpu::rope_rotate_interleaved(x, 2, c, s);
  EXPECT_NEAR(x[0], 1 * c[0] - 2 * s[0], 1e-6f);
  EXPECT_NEAR(x[1], 1 * s[0] + 2 * c[0], 1e-6f);
  EXPECT_NEAR(x[2], 3 * c[1] - 4 * s[1], 1e-6f);
  EXPECT_NEAR(x[3], 3 * s[1] + 4 * c[1], 1e-6f);
}

}  // namespace
}  // namespace dss
