// Token-level stop decision after each sampled token (stop strings are text-level: see
// text/stop_string_matcher.h, run on the consumer side).
#pragma once

#include <cstdint>

#include "core/finish_reason.h"
#include "core/sampling_params.h"
#include "core/types.h"

namespace dss {

// FinishReason (kNone, kStop, kLength, kAbort) is shared with the scheduler: core/finish_reason.h.

// Decides whether a request ends with `token`, its n_generated-th generated token (count
// including `token`). Order as vLLM's check_stop:
//   - while n_generated < min_tokens, EOS and stop ids do not stop;
//   - kStop: token == eos_token (unless ignore_eos; a negative eos_token means none) or token is
//     in stop_token_ids;
//   - kLength: n_generated >= max_tokens;
//   - else kNone.
// The context-length cap is the scheduler's (it knows the prompt length).
FinishReason finish_after_token(const SamplingParams& params, TokenId eos_token, TokenId token,
                                int32_t n_generated);

const char* finish_reason_name(FinishReason reason);  // "none", "stop", "length" (OpenAI spelling)

}  // namespace dss
