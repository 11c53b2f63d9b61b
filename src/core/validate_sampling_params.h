// Input validation of SamplingParams (first failure tier: a bad request becomes an HTTP 400
// naming the field). Ranges follow vLLM's SamplingParams._verify_args.
//
// Here, beside the plain data it checks, because two layers that do not depend on each other
// apply the same contract: the engine on every submit, the server before it renders a response
// (server/request_prep.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "core/sampling_params.h"

namespace dss {

// Upper bound on SamplingParams::logprobs (vLLM's default max_logprobs).
inline constexpr int32_t kMaxLogprobs = 20;

// Ok, or an error such as "top_p must be in (0, 1], got 1.5". n_vocab bounds stop_token_ids.
inline Status validate_sampling_params(const SamplingParams& p, int32_t n_vocab) {
  // The negated forms also reject NaN.
  if (!(p.temperature >= 0.0f) || std::isinf(p.temperature))
    return Status::error("temperature must be finite and >= 0, got ", p.temperature);
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
    return Status::error("top_p must be in (0, 1], got ", p.top_p);
  if (p.top_k < -1) return Status::error("top_k must be -1, 0 (disabled) or >= 1, got ", p.top_k);
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f))
    return Status::error("min_p must be in [0, 1], got ", p.min_p);
  if (!(p.repetition_penalty > 0.0f) || std::isinf(p.repetition_penalty))
    return Status::error("repetition_penalty must be finite and > 0, got ", p.repetition_penalty);
  if (!(p.frequency_penalty >= -2.0f && p.frequency_penalty <= 2.0f))
    return Status::error("frequency_penalty must be in [-2, 2], got ", p.frequency_penalty);
  if (!(p.presence_penalty >= -2.0f && p.presence_penalty <= 2.0f))
    return Status::error("presence_penalty must be in [-2, 2], got ", p.presence_penalty);
  if (p.max_tokens < 1) return Status::error("max_tokens must be >= 1, got ", p.max_tokens);
  if (p.min_tokens < 0 || p.min_tokens > p.max_tokens)
    return Status::error("min_tokens must be in [0, max_tokens=", p.max_tokens, "], got ",
                         p.min_tokens);
  if (p.logprobs < -1 || p.logprobs > kMaxLogprobs)
    return Status::error("logprobs must be in [0, ", kMaxLogprobs, "], got ", p.logprobs);
  for (const TokenId t : p.stop_token_ids) {
    if (t < 0 || t >= n_vocab)
      return Status::error("stop_token_ids: ", t, " is outside the vocabulary [0, ", n_vocab, ")");
  }
  for (const std::string& s : p.stop) {
    if (s.empty()) return Status::error("stop: empty stop strings are not allowed");
  }
  return Status::ok();
}

}  // namespace dss
