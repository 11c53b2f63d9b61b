#include "sample/logits_processors.h"

#include <algorithm>
#include <limits>

namespace dss {

void apply_penalties(std::span<float> logits, const SamplingParams& params,
                     const SamplerState& state) {
  const auto n_vocab = static_cast<TokenId>(logits.size());
  auto in_vocab = [&](TokenId t) { return t >= 0 && t < n_vocab; };
  if (params.repetition_penalty != 1.0f) {
    const float rp = params.repetition_penalty;
    auto penalise = [&](TokenId t) {
      float& l = logits[static_cast<size_t>(t)];
      l = l > 0.0f ? l / rp : l * rp;
    };
    const std::span<const TokenId> prompt = state.prompt_tokens();
    for (const TokenId t : prompt)
      if (in_vocab(t)) penalise(t);
    for (const auto& [t, count] : state.output_counts()) {
      // Seen in the prompt too: already penalised (the rule is "seen", not "how often").
      if (in_vocab(t) && !std::binary_search(prompt.begin(), prompt.end(), t)) penalise(t);
    }
  }
  if (params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f) {
    for (const auto& [t, count] : state.output_counts()) {
      if (!in_vocab(t)) continue;
      float& l = logits[static_cast<size_t>(t)];
      l -= params.frequency_penalty * static_cast<float>(count);
      l -= params.presence_penalty;  // every entry has count > 0
    }
  }
}

void apply_min_tokens(std::span<float> logits, const SamplingParams& params, TokenId eos_token,
                      int32_t n_generated) {
  if (n_generated >= params.min_tokens) return;
  const auto n_vocab = static_cast<TokenId>(logits.size());
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (const TokenId t : params.stop_token_ids)
    if (t >= 0 && t < n_vocab) logits[static_cast<size_t>(t)] = kNegInf;
  if (!params.ignore_eos && eos_token >= 0 && eos_token < n_vocab)
    logits[static_cast<size_t>(eos_token)] = kNegInf;
}

}  // namespace dss
