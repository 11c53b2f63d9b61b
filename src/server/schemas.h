// Schemas: OpenAI request JSON -> CompletionRequest, for POST /v1/chat/completions and
// POST /v1/completions. Unknown keys are ignored (as OpenAI-compatible servers do); a known key
// of the wrong type or range is an error whose message starts with the field name
// ("top_p must be in (0, 1], got 1.5", "messages[1].role: missing"), shown as HTTP 400.
//
// Accepted fields (both endpoints): model, stream, stream_options.include_usage, n, max_tokens,
// max_completion_tokens (chat), temperature, top_p, top_k, min_p, seed, stop, stop_token_ids,
// ignore_eos, min_tokens, repetition_penalty, frequency_penalty, presence_penalty,
// skip_special_tokens, include_stop_str_in_output, return_token_ids, user (ignored); the
// structured-output fields response_format, structured_outputs, regex, ebnf (output_constraint.h).
//   chat: messages, tools, tool_choice (none|auto|required|{type:function,function:{name}}),
//         parallel_tool_calls (false: a forced call is exactly one call), logprobs (bool),
//         top_logprobs (0..20), chat_template_kwargs.{thinking|enable_thinking}
//   completions: prompt (string | [string] | [int] | [[int]]), logprobs (int 0..20), echo=false.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "core/sampling_params.h"
#include "core/types.h"
#include "io/json.h"
#include "server/output_constraint.h"
#include "text/chat_request.h"

namespace dss {

enum class Endpoint { kChat, kCompletions };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int32_t n = 1;               // choices per prompt, fanned out into n engine requests
  SamplingParams params;  // params.logprobs: -1 none, else top-n alternatives (0 = sampled only)
  bool max_tokens_given = false;                // false: max_tokens = what is left of the context
  std::string max_tokens_field = "max_tokens";  // the key that set it (errors name it)
  bool return_token_ids = false;
  OutputConstraint constraint;  // structured output (kNone: free text)
  // chat
  ChatRequest chat;
  std::string tool_choice = "auto";  // none | auto | required | named
  std::string tool_choice_name;      // when named
  bool parallel_tool_calls = true;   // false: tool_choice "required" forces exactly one call
  // completions: exactly one of the two lists is non-empty
  std::vector<std::string> prompt_texts;
  std::vector<std::vector<TokenId>> prompt_ids;
};

Result<CompletionRequest> parse_completion_request(Endpoint endpoint, const OrderedJson& j);

// The sampling fields of one request object over `p`, read as POST /v1/completions reads them:
// max_tokens (>= 1), temperature, top_p, top_k, min_p, seed, stop, stop_token_ids, ignore_eos,
// min_tokens, the penalties, skip_special_tokens, include_stop_str_in_output, logprobs (an integer
// in [0, 20]). Absent or null keeps p's value; errors start with the field name. Types and
// ranges of the JSON only: validate_sampling_params (core/) checks the values.
// (`dsserve generate` reads its JSONL requests with it.)
Status parse_sampling_params(const OrderedJson& j, SamplingParams& p);

}  // namespace dss
