// SamplingParams: how one request's tokens are chosen and when it stops (plain data, shared by
// server, engine and sampler). Defaults follow OpenAI/vLLM: temperature 1, no truncation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"

namespace dss {

struct SamplingParams {
  float temperature = 1.0f;         // 0 = greedy (argmax, first maximum)
  float top_p = 1.0f;               // nucleus mass in (0, 1]
  int32_t top_k = 0;                // 0 or -1 = disabled
  float min_p = 0.0f;               // keep tokens with p >= min_p * p_max
  float repetition_penalty = 1.0f;  // > 1 discourages tokens seen in prompt or output (CTRL-style)
  float frequency_penalty = 0.0f;   // OpenAI: logit -= f * count(output)
  float presence_penalty = 0.0f;    // OpenAI: logit -= p * (count(output) > 0)
  std::optional<uint64_t> seed;     // reproducible sampling when set
  int32_t max_tokens = 16;          // new tokens at most
  int32_t min_tokens = 0;           // EOS / stop ids suppressed before this many new tokens
  bool ignore_eos = false;
  std::vector<TokenId> stop_token_ids;
  std::vector<std::string> stop;  // stop strings, matched on detokenized text (consumer side)
  bool include_stop_str_in_output = false;
  int32_t logprobs = -1;  // -1: none; 0: the sampled token's logprob; n: plus top-n alternatives
  bool skip_special_tokens = true;
};

}  // namespace dss
