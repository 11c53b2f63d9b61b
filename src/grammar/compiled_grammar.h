// CompiledGrammar: a lowered grammar bound to a vocabulary, shared by every request that uses
// the same grammar (GrammarCompiler caches them by source text).
//
// It owns the lazily determinised automaton (automaton.h), the per-truncated-state masks
// (stack_masks.h) and, for states whose truncated mask leaves uncertain tokens, an exact mask
// cache keyed by automaton state (bounded: cleared when it exceeds `max_state_masks` entries). All
// of these grow on first use, so every public method takes the grammar's mutex: requests on several
// threads share one grammar safely but serialise on it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/bnf.h"
#include "grammar/stack_masks.h"
#include "grammar/token_mask.h"
#include "grammar/token_vocab.h"

namespace dss::grammar {

struct CompileOptions {
  int32_t stack_depth = 8;         // truncation depth of the per-stack masks
  int32_t max_state_masks = 4096;  // exact per-state masks kept before the cache is cleared
};

struct GrammarStats {
  int32_t n_rules = 0, n_elems = 0, n_states = 0, n_stacks = 0;
  size_t n_stack_masks = 0, n_state_masks = 0, cache_bytes = 0;
};

class CompiledGrammar {
 public:
  CompiledGrammar(Bnf bnf, std::shared_ptr<const TokenVocab> vocab,
                  const CompileOptions& opts = {});

  const TokenVocab& vocab() const { return *vocab_; }
  // What it was made from (fixed at construction: no lock needed). The data-parallel front sends
  // these to another process, which makes the same grammar over its own copy of the vocabulary.
  const Bnf& bnf() const { return automaton_.bnf(); }
  const CompileOptions& options() const { return opts_; }
  int32_t initial_state() const { return initial_; }

  // The state after `id` (Automaton::kDead if the grammar rejects it). EOS and ids without
  // bytes give kDead: the matcher handles EOS itself.
  int32_t advance_token(int32_t state, TokenId id);
  int32_t advance_bytes(int32_t state, std::string_view bytes);
  // Writes the allowed-token mask of `state` (EOS set iff the grammar can end there).
  // Precondition: words.size() == vocab().n_words().
  void fill_mask(int32_t state, std::span<uint64_t> words);
  bool can_end(int32_t state);
  // True when the grammar can only end: the state's one stack is the empty one.
  bool must_end(int32_t state);

  GrammarStats stats();

 private:
  std::mutex mu_;
  std::shared_ptr<const TokenVocab> vocab_;
  CompileOptions opts_;
  Automaton automaton_;
  StackMasks stack_masks_;
  std::unordered_map<int32_t, MaskSet> state_masks_;
  int32_t initial_;
  std::vector<TokenId> scratch_ids_;
};

}  // namespace dss::grammar
