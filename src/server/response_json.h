// OpenAI response pieces as JSON: usage, chat and completions logprobs, tool-call-aware chat
// messages. Pure functions of their inputs (the route layer assembles whole responses).
#pragma once

#include <cstdint>
#include <vector>

#include "io/json.h"
#include "server/choice_stream.h"
#include "text/parse_event.h"
#include "text/tokenizer.h"

namespace dss {

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
};

// {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details":
// {"cached_tokens"}}
OrderedJson usage_json(const Usage& u);

// Text of one token for logprobs ("" without a tokenizer; lossy UTF-8 of its bytes otherwise).
std::string token_text(const Tokenizer* tok, TokenId id);

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token","logprob","bytes"}]}]}
OrderedJson chat_logprobs_json(const Tokenizer* tok, const std::vector<TokenLogprob>& lps);
// Completions: {"tokens", "token_logprobs", "top_logprobs": [{text: logprob}], "text_offset"};
// offsets start at `text_offset` and advance by each token's text length.
OrderedJson completion_logprobs_json(const Tokenizer* tok, const std::vector<TokenLogprob>& lps,
                                     int64_t text_offset);

// The non-streamed chat message: {"role": "assistant", "content", "reasoning_content"?,
// "tool_calls"?}. content is null when empty and tools were called (as OpenAI).
OrderedJson chat_message_json(const ParsedOutput& out);

}  // namespace dss
