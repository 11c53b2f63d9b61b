// Rotary position embedding on the host, in float32 as DeepSeek's reference computes it
// (docs/deepseek-reference.md 2.4). The frequencies (YaRN-adjusted) come from the model's
// RopeTable (model/deepseek/rope.h); these functions only turn them into rotations. Scalar:
// O(tokens x d_rope) work per layer, far below the projections around it.
#pragma once

#include <cstdint>

namespace dss::cpu {

// cos/sin of pair i at `pos`: angle float32(pos) * freqs[i] in float32 (torch.outer), then
// cos/sin of it (torch.polar on float32 angles), into cos[n_pairs], sin[n_pairs].
void rope_angles(const float* freqs, int32_t n_pairs, int32_t pos, float* cos, float* sin);

// Interleaved (GPT-J) rotation of pairs (x[2i], x[2i+1]): the MLA convention.
void rope_rotate_interleaved(float* x, int32_t n_pairs, const float* cos, const float* sin);

// Non-interleaved ("NeoX", half-split) rotation of x[0, 2 * n_pairs): pair i is
// (x[i], x[i + n_pairs]), the V3.2 indexer's convention.
void rope_rotate_half_split(float* x, int32_t n_pairs, const float* cos, const float* sin);

}  // namespace dss::cpu
