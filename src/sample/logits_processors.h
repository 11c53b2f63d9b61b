// In-place edits of one row of logits that come before temperature: penalties and the min_tokens
// mask. Pure functions (separate from Sampler so tests can check exact values).
#pragma once

#include <cstdint>
#include <span>

#include "core/sampling_params.h"
#include "core/types.h"
#include "sample/sampler_state.h"

namespace dss {

// logits: [n_vocab]. In vLLM's order: repetition (tokens seen in the prompt or output, once each:
// l > 0 ? l / r : l * r), then frequency (l -= f * count in output), then presence (l -= p for
// tokens in the output). Token ids outside [0, n_vocab) are ignored.
void apply_penalties(std::span<float> logits, const SamplingParams& params,
                     const SamplerState& state);

// While n_generated < params.min_tokens: stop_token_ids and eos_token (unless ignore_eos, or
// eos_token < 0) become -inf.
void apply_min_tokens(std::span<float> logits, const SamplingParams& params, TokenId eos_token,
                      int32_t n_generated);

}  // namespace dss
