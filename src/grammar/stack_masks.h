// StackMasks: xgrammar's adaptive token-mask cache, over truncated stacks.
//
// The tokens a stack accepts depend on the whole stack only through the bytes a token has left
// once the stack's top `depth` frames have all returned. So for each distinct truncated state
// (every stack of a state cut to its top `depth` frames over Automaton::kBottom) one walk of the
// vocabulary trie sorts every token into
//   accepted:  consumed within the truncated frames on some path -> allowed under any context;
//   uncertain: a path reached kBottom with bytes left -> decided per request against the full
//              state (CompiledGrammar::fill_mask);
//   rejected:  everything else (not stored).
// Stacks no deeper than `depth` are their own truncation and give no uncertain tokens. One walk
// per state, not per stack: a string's content is ~10 stacks (one per UTF-8 length and escape)
// that share the trie's prefixes. Entries are computed on first use and kept for the compiled
// grammar's lifetime.
// Not thread-safe: CompiledGrammar serialises calls.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/token_mask.h"
#include "grammar/token_vocab.h"

namespace dss::grammar {

struct StackMask {
  MaskSet accepted;
  std::vector<TokenId> uncertain;
};

class StackMasks {
 public:
  explicit StackMasks(int32_t depth) : depth_(depth) {}

  // The entry for `state` (a state of `a` without kBottom).
  const StackMask& get(Automaton& a, const TokenVocab& vocab, int32_t state);

  size_t n_entries() const { return entries_.size(); }
  size_t bytes() const;

 private:
  StackMask compute(Automaton& a, const TokenVocab& vocab, int32_t start_state);

  int32_t depth_;
  std::unordered_map<int32_t, int32_t> by_state_;  // state -> entry
  std::unordered_map<int32_t, int32_t> by_trunc_;  // truncated state -> entry
  std::vector<StackMask> entries_;
  std::vector<int32_t> states_;  // walk scratch, [max_depth + 1]
  std::vector<uint8_t> bottom_;
  std::vector<uint64_t> accepted_;  // [n_words] walk scratch
};

}  // namespace dss::grammar
