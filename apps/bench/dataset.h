// Synthetic prompts of exact token lengths, built from token ids of the real tokenizer.
//
// WordVocab keeps the vocabulary entries that are a space plus 2..12 lowercase ASCII letters and
// encode back to themselves alone. The pre-tokenizer splits text before each " word", so any
// concatenation of such entries re-encodes to exactly those ids: a prompt of n entries is n
// tokens, as token ids (completions) and as text (chat). `build_requests` checks this per prompt.
//
// Lengths: input and output lengths are uniform integers in [int(L(1-r)), int(L(1+r))] (vLLM's
// random dataset), at least 1. The first `shared_prefix_len` tokens are the same in every prompt
// (prefix-cache scenarios) and count inside the input length. For chat, `template_overhead`
// tokens (the chat template around the user message, measured against the server) are taken off
// the message so the rendered prompt has the sampled input length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "core/types.h"
#include "text/tokenizer.h"

namespace dss::bench {

class WordVocab {
 public:
  static Result<WordVocab> from_tokenizer(const Tokenizer& tok);
  const std::vector<TokenId>& ids() const { return ids_; }

 private:
  std::vector<TokenId> ids_;
};

struct DatasetOptions {
  int32_t n_requests = 0;
  int32_t input_len = 0, output_len = 0;
  double range_ratio = 0;         // in [0, 1)
  int32_t shared_prefix_len = 0;  // tokens shared by all prompts, within input_len
  int32_t template_overhead = 0;  // chat: prompt tokens the server adds around the message
  uint64_t seed = 0;
};

struct PlannedRequest {
  std::vector<TokenId> ids;  // the message (chat) or the whole prompt (completions)
  std::string text;          // the same tokens as text
  int64_t prompt_len = 0;    // expected prompt tokens at the server (ids + template_overhead)
  int64_t max_tokens = 0;    // requested output length
};

Result<std::vector<PlannedRequest>> build_requests(const Tokenizer& tok, const WordVocab& vocab,
                                                   const DatasetOptions& o);

// A fixed short message of `n` vocabulary entries (for the probe request).
PlannedRequest probe_request(const Tokenizer& tok, const WordVocab& vocab, int32_t n);

}  // namespace dss::bench
