#include "grammar/stack_masks.h"

namespace dss::grammar {

const StackMask& StackMasks::get(Automaton& a, const TokenVocab& vocab, int32_t state) {
  auto it = by_state_.find(state);
  if (it != by_state_.end()) return entries_[it->second];
  const int32_t trunc = a.truncated_state(state, depth_);
  auto jt = by_trunc_.find(trunc);
  int32_t e;
  if (jt != by_trunc_.end()) {
    e = jt->second;
  } else {
    entries_.push_back(compute(a, vocab, trunc));
    e = static_cast<int32_t>(entries_.size() - 1);
    by_trunc_.emplace(trunc, e);
  }
  by_state_.emplace(state, e);
  return entries_[e];
}

StackMask StackMasks::compute(Automaton& a, const TokenVocab& vocab, int32_t start_state) {
  StackMask m;
  accepted_.assign(vocab.n_words(), 0);
  const std::vector<TokenId>& ids = vocab.sorted_ids();
  states_.assign(vocab.max_depth() + 1, Automaton::kDead);
  bottom_.assign(vocab.max_depth() + 1, 0);
  states_[0] = start_state;
  bottom_[0] = a.has_bottom(start_state);
  const int32_t n = vocab.n_nodes();
  for (int32_t k = 1; k < n;) {
    const int32_t d = vocab.node_depth(k);
    const int32_t s = a.step(states_[d - 1], vocab.node_byte(k));
    if (s == Automaton::kDead) {
      if (bottom_[d - 1]) {
        const int32_t end = vocab.tok_begin(vocab.subtree_end(k));
        m.uncertain.insert(m.uncertain.end(), ids.begin() + vocab.tok_begin(k), ids.begin() + end);
      }
      k = vocab.subtree_end(k);
      continue;
    }
    states_[d] = s;
    bottom_[d] = bottom_[d - 1] || a.has_bottom(s);
    for (int32_t i = 0; i < vocab.n_here(k); ++i) mask_set(accepted_, ids[vocab.tok_begin(k) + i]);
    ++k;
  }
  m.accepted = MaskSet::from_words(accepted_);
  return m;
}

size_t StackMasks::bytes() const {
  size_t b = 0;
  for (const StackMask& e : entries_) b += e.accepted.bytes() + e.uncertain.size() * 4;
  return b;
}

}  // namespace dss::grammar
