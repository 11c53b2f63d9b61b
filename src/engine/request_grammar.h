// RequestGrammar: one request's structured-output state on the engine thread: its
// GrammarMatcher (grammar/matcher.h) and the gates that hold the grammar back until a marker has
// been generated: the end of a thinking-mode reasoning section (`</think>`), and for `strict`
// tools under tool_choice auto the start of a tool-call block.
//
// Per step: fill_mask() before sampling the request's row (the sampler sets disallowed logits to
// -inf), accept() with the sampled token, then done() says whether the grammar is complete.
// Gates open in order. While one is closed the mask is every id, but EOS only where that gate
// allows it (a reasoning section cannot end the reply; text before a tool call can). A gate opens
// after its token or once the output bytes contain its text; the bytes after the text in the same
// token go to the next gate, or to the grammar after the last one.
// Threading: engine thread only (the compiled grammar it points to is shared and locks itself).
// Cost: a cached state's mask is a copy of 2,020 words for DeepSeek's 129,280 ids; a new one
// walks the vocabulary trie once (docs/grammar.md).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "core/types.h"
#include "grammar/matcher.h"

namespace dss {

struct GrammarGate {
  TokenId token = -1;      // opens on this id (< 0: none)
  std::string text;        // or on these output bytes (empty: none)
  bool allow_eos = false;  // whether the reply may end before the gate opens
};

class RequestGrammar {
 public:
  // Gates in the order they open (empty: the grammar starts at the first token). A gate with
  // neither token nor text is dropped.
  RequestGrammar(std::shared_ptr<grammar::CompiledGrammar> grammar, std::vector<GrammarGate> gates);
  // One reasoning gate (EOS held back); reasoning_end_token < 0 and an empty text: no gate.
  RequestGrammar(std::shared_ptr<grammar::CompiledGrammar> grammar, TokenId reasoning_end_token,
                 std::string reasoning_end_text)
      : RequestGrammar(std::move(grammar), {{reasoning_end_token, std::move(reasoning_end_text)}}) {
  }

  // Writes the mask of ids allowed next (words.size() == the vocabulary's n_words()). Returns
  // false when it allows nothing: the grammar reached a dead end.
  bool fill_mask(std::span<uint64_t> words);
  // Advances on the sampled token. An error when the grammar rejects it (it was not in the mask,
  // or bytes after the reasoning end that the grammar does not allow): the request must end.
  Status accept(TokenId token);
  // The grammar is complete (EOS accepted, or nothing but EOS could follow): the request stops.
  bool done() const { return !gated() && (matcher_.is_terminated() || matcher_.must_terminate()); }
  bool gated() const { return next_gate_ < gates_.size(); }

 private:
  // Feeds output bytes to the open gate's text search; opens gates and passes what follows the
  // last one to the grammar.
  Status accept_gated_bytes(std::string_view bytes);

  grammar::GrammarMatcher matcher_;
  std::vector<GrammarGate> gates_;
  size_t next_gate_ = 0;  // gates_[next_gate_] is closed; == size(): the grammar runs
  std::string tail_;      // the last text.size() - 1 output bytes while gated
};

}  // namespace dss
