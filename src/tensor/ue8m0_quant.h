// DeepSeek's activation quantiser with a UE8M0 (power-of-two) scale over one block, as the V3.2
// reference applies it to the indexer q/k and to the FP8 latent cache (act_quant(..., ue8m0)):
//   s = 2^ceil(log2(max(amax, 1e-4) / 448)),  codes[i] = e4m3(clamp(x[i] / s, -448, 448))
// rounded to nearest even. Returns s. x: [n] f32, codes: [n] e4m3 bytes. Scalar; per token.
#pragma once

#include <cstdint>

namespace dss {

float quant_block_ue8m0(const float* x, int32_t n, uint8_t* codes);

}  // namespace dss
