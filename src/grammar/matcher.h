// GrammarMatcher: one request's position in a compiled grammar.
//
// The state after every accepted token is kept (automaton states are immutable and shared), so
// rollback(k) restores exactly the state, and hence the mask, from k tokens ago.
// Contract: fill_next_token_bitmask, then accept_token with a token the mask allowed. EOS is
// allowed exactly when the grammar can end; accepting it terminates the matcher, after which
// only rollback is possible. Not thread-safe (one request, one thread at a time); the compiled
// grammar it points to may be shared across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "grammar/compiled_grammar.h"

namespace dss::grammar {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<CompiledGrammar> grammar);

  // Writes the mask of tokens allowed next (words.size() == vocab().n_words()). After
  // termination the mask is empty.
  void fill_next_token_bitmask(std::span<uint64_t> words);
  // Advances on `id`; an error (naming the token) if the grammar does not allow it, or if the
  // matcher has terminated. On error the state is unchanged.
  Status accept_token(TokenId id);
  // Advances on raw bytes (a forced prefix, or a test). Counts as one step for rollback.
  Status accept_bytes(std::string_view bytes);
  // Undoes the last n accepted steps. Precondition: 0 <= n <= n_accepted().
  void rollback(int32_t n);

  int32_t n_accepted() const { return static_cast<int32_t>(history_.size()) - 1; }
  bool can_terminate() const;  // EOS would be accepted now
  bool is_terminated() const { return history_.back().terminated; }
  // The grammar is complete and allows nothing but EOS.
  bool must_terminate() const;
  const CompiledGrammar& grammar() const { return *grammar_; }

 private:
  struct Step {
    int32_t state;
    bool terminated;
  };
  std::shared_ptr<CompiledGrammar> grammar_;
  std::vector<Step> history_;  // [n_accepted + 1]; front: the initial state
};

}  // namespace dss::grammar
