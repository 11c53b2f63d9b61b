#include "grammar/compiled_grammar.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace dss::grammar {

CompiledGrammar::CompiledGrammar(Bnf bnf, std::shared_ptr<const TokenVocab> vocab,
                                 const CompileOptions& opts)
    : vocab_(std::move(vocab)),
      opts_(opts),
      automaton_(std::move(bnf)),
      stack_masks_(opts.stack_depth),
      initial_(automaton_.initial_state()) {}

int32_t CompiledGrammar::advance_token(int32_t state, TokenId id) {
  std::string_view b = vocab_->bytes(id);
  if (b.empty()) return Automaton::kDead;
  std::lock_guard<std::mutex> lock(mu_);
  return automaton_.walk(state, b);
}

int32_t CompiledGrammar::advance_bytes(int32_t state, std::string_view bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  return automaton_.walk(state, bytes);
}

bool CompiledGrammar::can_end(int32_t state) {
  std::lock_guard<std::mutex> lock(mu_);
  return automaton_.can_end(state);
}

bool CompiledGrammar::must_end(int32_t state) {
  std::lock_guard<std::mutex> lock(mu_);
  std::span<const int32_t> s = automaton_.stacks(state);
  return s.size() == 1 && s[0] == Automaton::kAccept;
}

void CompiledGrammar::fill_mask(int32_t state, std::span<uint64_t> words) {
  DSS_CHECK(static_cast<int32_t>(words.size()) == vocab_->n_words(), "words=", words.size());
  std::fill(words.begin(), words.end(), 0);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = state_masks_.find(state);
  if (it != state_masks_.end()) {
    it->second.merge_into(words);
    return;
  }
  const StackMask& m = stack_masks_.get(automaton_, *vocab_, state);
  m.accepted.merge_into(words);
  if (automaton_.can_end(state)) mask_set(words, vocab_->eos_id());
  if (m.uncertain.empty()) return;  // exact already: the entry is this state's mask
  scratch_ids_.assign(m.uncertain.begin(), m.uncertain.end());  // walks below may add entries
  for (TokenId id : scratch_ids_) {
    if (mask_test(words, id)) continue;
    if (automaton_.walk(state, vocab_->bytes(id)) != Automaton::kDead) mask_set(words, id);
  }
  // Keep the exact mask; the cache is bounded by clearing it when full.
  if (static_cast<int32_t>(state_masks_.size()) >= opts_.max_state_masks) state_masks_.clear();
  state_masks_.emplace(state, MaskSet::from_words(words));
}

GrammarStats CompiledGrammar::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  GrammarStats s;
  s.n_rules = automaton_.bnf().n_rules();
  s.n_elems = static_cast<int32_t>(automaton_.bnf().elems.size());
  s.n_states = automaton_.n_states();
  s.n_stacks = automaton_.n_stacks();
  s.n_stack_masks = stack_masks_.n_entries();
  s.n_state_masks = state_masks_.size();
  s.cache_bytes = stack_masks_.bytes();
  for (const auto& [k, m] : state_masks_) s.cache_bytes += m.bytes();
  return s;
}

}  // namespace dss::grammar
