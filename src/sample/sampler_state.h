// SamplerState: what one request's sampling remembers between steps: its RNG stream, how many
// tokens it generated and how often each, and the set of prompt tokens (for repetition_penalty).
//
// Threading: owned by the engine thread with its request. Survives preemption by recompute, so a
// recomputed request continues the same random stream.
// Memory: O(distinct prompt tokens + distinct generated tokens), not O(n_vocab).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/rng.h"
#include "core/sampling_params.h"
#include "core/types.h"

namespace dss {

class SamplerState {
 public:
  // The RNG is seeded from params.seed when set (same seed + same logits => same tokens, whatever
  // the engine or batch), else from engine_seed and request_id.
  SamplerState(const SamplingParams& params, std::span<const TokenId> prompt, uint64_t engine_seed,
               RequestId request_id);

  // Records one generated token. Sampler::sample calls it for the token it returns.
  void append(TokenId token);

  int32_t n_generated() const { return n_generated_; }
  // Times `token` was generated so far.
  int32_t output_count(TokenId token) const;
  const std::unordered_map<TokenId, int32_t>& output_counts() const { return output_counts_; }
  // Distinct prompt tokens, sorted ascending.
  std::span<const TokenId> prompt_tokens() const { return prompt_tokens_; }
  Rng& rng() { return rng_; }

 private:
  Rng rng_;
  std::vector<TokenId> prompt_tokens_;                  // sorted, unique
  std::unordered_map<TokenId, int32_t> output_counts_;  // token -> count in the output
  int32_t n_generated_ = 0;
};

}  // namespace dss
