// RequestGrammar: one request's structured-output state on the engine thread: its
// GrammarMatcher (grammar/matcher.h) and, in thinking mode, the gate that holds the grammar back
// until the reasoning section has ended.
//
// Per step: fill_mask() before sampling the request's row (the sampler sets disallowed logits to
// -inf), accept() with the sampled token, then done() says whether the grammar is complete.
// While gated the mask is every id but EOS (a reasoning section cannot end the reply); the gate
// opens after the reasoning-end token (`</think>`) or once the output bytes contain the
// reasoning-end text, whose trailing bytes in the same token then go to the grammar.
// Threading: engine thread only (the compiled grammar it points to is shared and locks itself).
// Cost: a cached state's mask is a copy of 2,020 words for DeepSeek's 129,280 ids; a new one
// walks the vocabulary trie once (docs/grammar.md).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/status.h"
#include "core/types.h"
#include "grammar/matcher.h"

namespace dss {

class RequestGrammar {
 public:
  // reasoning_end_token < 0 and an empty reasoning_end_text: no gate (the grammar starts at the
  // first token).
  RequestGrammar(std::shared_ptr<grammar::CompiledGrammar> grammar, TokenId reasoning_end_token,
                 std::string reasoning_end_text);

  // Writes the mask of ids allowed next (words.size() == the vocabulary's n_words()). Returns
  // false when it allows nothing: the grammar reached a dead end.
  bool fill_mask(std::span<uint64_t> words);
  // Advances on the sampled token. An error when the grammar rejects it (it was not in the mask,
  // or bytes after the reasoning end that the grammar does not allow): the request must end.
  Status accept(TokenId token);
  // The grammar is complete (EOS accepted, or nothing but EOS could follow): the request stops.
  bool done() const { return !gated_ && (matcher_.is_terminated() || matcher_.must_terminate()); }
  bool gated() const { return gated_; }

 private:
  grammar::GrammarMatcher matcher_;
  bool gated_;
  TokenId end_token_;
  std::string end_text_;
  std::string tail_;  // the last end_text_.size() - 1 output bytes while gated
};

}  // namespace dss
