#include "tensor/ue8m0_quant.h"

#include <algorithm>
#include <cmath>

#include "tensor/dtype.h"

namespace dss {

float quant_block_ue8m0(const float* x, int32_t n, uint8_t* codes) {
  float amax = 0.0f;
  for (int32_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float s_raw = std::max(amax, 1e-4f) * (1.0f / 448.0f);
  int e = 0;
  const float m = std::frexp(s_raw, &e);  // s_raw = m * 2^e, m in [0.5, 1)
  const float s = m == 0.5f ? std::ldexp(1.0f, e - 1) : std::ldexp(1.0f, e);  // 2^ceil(log2 s_raw)
  for (int32_t i = 0; i < n; ++i) {
    codes[i] = f32_to_fp8e4m3(std::clamp(x[i] / s, -kFp8E4M3Max, kFp8E4M3Max));
  }
  return s;
}

}  // namespace dss
