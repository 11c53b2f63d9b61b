#include "sample/sampler_state.h"

#include <algorithm>

namespace dss {

namespace {

uint64_t derive_seed(const SamplingParams& params, uint64_t engine_seed, RequestId request_id) {
  if (params.seed.has_value()) return *params.seed;
  // Mix the two so that neighbouring request ids give unrelated streams.
  uint64_t state = engine_seed;
  const uint64_t a = splitmix64(state);
  state = static_cast<uint64_t>(request_id) ^ a;
  return splitmix64(state);
}

}  // namespace

SamplerState::SamplerState(const SamplingParams& params, std::span<const TokenId> prompt,
                           uint64_t engine_seed, RequestId request_id)
    : rng_(derive_seed(params, engine_seed, request_id)),
      prompt_tokens_(prompt.begin(), prompt.end()) {
  std::sort(prompt_tokens_.begin(), prompt_tokens_.end());
  prompt_tokens_.erase(std::unique(prompt_tokens_.begin(), prompt_tokens_.end()),
                       prompt_tokens_.end());
}

void SamplerState::append(TokenId token) {
  ++output_counts_[token];
  ++n_generated_;
}

int32_t SamplerState::output_count(TokenId token) const {
  const auto it = output_counts_.find(token);
  return it == output_counts_.end() ? 0 : it->second;
}

}  // namespace dss
