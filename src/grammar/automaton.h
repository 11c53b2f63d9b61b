// Automaton: the pushdown automaton of a Bnf, run over bytes and determinised lazily.
//
// A stack is an interned node (position of a terminal element in Bnf::elems, parent stack); the
// parent holds the return position. Two stacks are special: kAccept, the empty stack (the grammar
// may end here), and kBottom, the unknown context below a truncated stack (mask_cache.h). A state
// is an interned sorted set of stacks; state 0 is the dead state (no stacks). step() gives the
// state after one byte and caches the transition, so the same (state, byte) pair is computed
// once per compiled grammar; states never change once made, so a matcher's history of state ids
// is an exact rollback log.
//
// Not thread-safe: CompiledGrammar serialises every call with its mutex.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "grammar/bnf.h"

namespace dss::grammar {

class Automaton {
 public:
  static constexpr int32_t kAccept = -1;  // stack id: empty stack, the input may end
  static constexpr int32_t kBottom = -2;  // stack id: unknown context (truncated stacks)
  static constexpr int32_t kDead = 0;     // state id: no way forward

  explicit Automaton(Bnf bnf);

  int32_t initial_state() const { return initial_; }
  int32_t step(int32_t state, uint8_t byte) {
    const int32_t off = trans_offset_[state];
    if (off >= 0 && trans_[off + byte] >= 0) return trans_[off + byte];
    return step_slow(state, byte);
  }
  // The state after `bytes` (kDead as soon as a byte is rejected).
  int32_t walk(int32_t state, std::string_view bytes);

  // Valid until the next call that may add a state (step, walk, truncated_state).
  std::span<const int32_t> stacks(int32_t state) const;
  bool can_end(int32_t state) const { return flags_[state] & kCanEnd; }
  bool has_bottom(int32_t state) const { return flags_[state] & kHasBottom; }

  // `state` with every stack cut to its top `depth` nodes over kBottom (a stack no deeper is
  // kept whole; a state of such stacks only is its own truncation).
  int32_t truncated_state(int32_t state, int32_t depth);

  int32_t n_states() const { return static_cast<int32_t>(flags_.size()); }
  int32_t n_stacks() const { return static_cast<int32_t>(node_pos_.size()); }
  const Bnf& bnf() const { return bnf_; }

 private:
  static constexpr uint8_t kCanEnd = 1, kHasBottom = 2;

  int32_t step_slow(int32_t state, uint8_t byte);  // computes and stores the transition
  int32_t node(int32_t pos, int32_t parent);
  int32_t intern_state(std::vector<int32_t>& stacks);  // sorts and dedups `stacks`
  // Adds to `out` every stack reachable from (pos, parent) without consuming a byte whose top
  // is a terminal, kAccept or kBottom.
  void closure(int32_t pos, int32_t parent, std::vector<int32_t>& out);

  Bnf bnf_;
  int32_t initial_ = kDead;
  // Stacks: node i = (node_pos_[i], node_parent_[i]).
  std::vector<int32_t> node_pos_, node_parent_;
  std::unordered_map<uint64_t, int32_t> node_index_;
  // States: stacks of state s are state_stacks_[state_begin_[s] .. state_begin_[s + 1]).
  std::vector<int32_t> state_stacks_, state_begin_;
  std::vector<uint8_t> flags_;
  struct VecHash {
    size_t operator()(const std::vector<int32_t>& v) const;
  };
  std::unordered_map<std::vector<int32_t>, int32_t, VecHash> state_index_;
  // Transitions: 256 entries per state that has been stepped from (-1 = not computed yet).
  std::vector<int32_t> trans_offset_;  // [n_states] -1 or offset into trans_
  std::vector<int32_t> trans_;
  // Scratch of closure().
  std::vector<std::pair<int32_t, int32_t>> work_;
  std::unordered_set<uint64_t> visited_;
  std::vector<int32_t> out_;
};

}  // namespace dss::grammar
