#include "grammar/matcher.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace dss::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<CompiledGrammar> grammar)
    : grammar_(std::move(grammar)) {
  history_.push_back({grammar_->initial_state(), false});
}

void GrammarMatcher::fill_next_token_bitmask(std::span<uint64_t> words) {
  if (is_terminated()) {
    std::fill(words.begin(), words.end(), 0);
    return;
  }
  grammar_->fill_mask(history_.back().state, words);
}

Status GrammarMatcher::accept_token(TokenId id) {
  if (is_terminated()) return Status::error("grammar: token ", id, " after the end");
  const int32_t state = history_.back().state;
  if (id == grammar_->vocab().eos_id()) {
    if (!grammar_->can_end(state)) return Status::error("grammar: EOS before the grammar ends");
    history_.push_back({state, true});
    return Status::ok();
  }
  const int32_t next = grammar_->advance_token(state, id);
  if (next == Automaton::kDead) return Status::error("grammar: token ", id, " not allowed");
  history_.push_back({next, false});
  return Status::ok();
}

Status GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (is_terminated()) return Status::error("grammar: bytes after the end");
  const int32_t next = grammar_->advance_bytes(history_.back().state, bytes);
  if (next == Automaton::kDead) return Status::error("grammar: bytes not allowed");
  history_.push_back({next, false});
  return Status::ok();
}

void GrammarMatcher::rollback(int32_t n) {
  DSS_CHECK(n >= 0 && n <= n_accepted(), "n=", n, " n_accepted=", n_accepted());
  history_.resize(history_.size() - n);
}

bool GrammarMatcher::can_terminate() const {
  return !is_terminated() && grammar_->can_end(history_.back().state);
}

bool GrammarMatcher::must_terminate() const {
  return !is_terminated() && grammar_->must_end(history_.back().state);
}

}  // namespace dss::grammar
