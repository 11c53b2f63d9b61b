#include "sample/finish.h"

#include <algorithm>

namespace dss {

FinishReason finish_after_token(const SamplingParams& params, TokenId eos_token, TokenId token,
                                int32_t n_generated) {
  if (n_generated >= params.min_tokens) {
    if (!params.ignore_eos && eos_token >= 0 && token == eos_token) return FinishReason::kStop;
    if (std::find(params.stop_token_ids.begin(), params.stop_token_ids.end(), token) !=
        params.stop_token_ids.end()) {
      return FinishReason::kStop;
    }
  }
  if (n_generated >= params.max_tokens) return FinishReason::kLength;
  return FinishReason::kNone;
}

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone:
      return "none";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kError:
      return "error";
  }
  return "none";
}

}  // namespace dss
