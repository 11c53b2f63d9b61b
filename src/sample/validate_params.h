// Input validation of SamplingParams (first failure tier: a bad request becomes an HTTP 400
// naming the field). Ranges follow vLLM's SamplingParams._verify_args.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "core/sampling_params.h"

namespace dss {

// Upper bound on SamplingParams::logprobs (vLLM's default max_logprobs).
inline constexpr int32_t kMaxLogprobs = 20;

// Ok, or an error such as "top_p must be in (0, 1], got 1.5". n_vocab bounds stop_token_ids.
Status validate_sampling_params(const SamplingParams& params, int32_t n_vocab);

}  // namespace dss
