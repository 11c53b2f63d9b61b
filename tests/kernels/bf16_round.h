// bf16 rounding as vcvtne2ps2bf16 does it, for the kernel tests' scalar models of the bf16-dot
// arithmetic (kernels/cpu/hwy_util-inl.h Bf16PairsOf): round to nearest even, an f32 subnormal as
// zero (a normal float rounds to a normal bf16); the result as f32. NaN is not expected.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace dss::test {

inline float bf16_round(float v) {
  if (std::fpclassify(v) == FP_SUBNORMAL) return 0.0f;
  uint32_t u;
  std::memcpy(&u, &v, 4);
  u = (u + ((u >> 16) & 1u) + 0x7FFFu) & 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

}  // namespace dss::test
