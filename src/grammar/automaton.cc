#include "grammar/automaton.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "base/check.h"

namespace dss::grammar {
namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

}  // namespace

size_t Automaton::VecHash::operator()(const std::vector<int32_t>& v) const {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
  for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 0x100000001B3ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

Automaton::Automaton(Bnf bnf) : bnf_(std::move(bnf)) {
  state_begin_.push_back(0);
  std::vector<int32_t> none;
  DSS_CHECK(intern_state(none) == kDead);
  out_.clear();
  for (int32_t a = bnf_.rule_alt_begin[bnf_.root]; a < bnf_.rule_alt_begin[bnf_.root + 1]; ++a) {
    closure(bnf_.alt_begin[a], kAccept, out_);
  }
  std::vector<int32_t> init = out_;
  initial_ = intern_state(init);
}

int32_t Automaton::node(int32_t pos, int32_t parent) {
  auto [it, added] = node_index_.emplace(pair_key(pos, parent), n_stacks());
  if (added) {
    node_pos_.push_back(pos);
    node_parent_.push_back(parent);
  }
  return it->second;
}

int32_t Automaton::intern_state(std::vector<int32_t>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  auto it = state_index_.find(stacks);
  if (it != state_index_.end()) return it->second;
  const int32_t id = n_states();
  uint8_t f = 0;
  for (int32_t s : stacks) {
    if (s == kAccept) f |= kCanEnd;
    if (s == kBottom) f |= kHasBottom;
  }
  state_stacks_.insert(state_stacks_.end(), stacks.begin(), stacks.end());
  state_begin_.push_back(static_cast<int32_t>(state_stacks_.size()));
  flags_.push_back(f);
  trans_offset_.push_back(-1);
  state_index_.emplace(stacks, id);
  return id;
}

std::span<const int32_t> Automaton::stacks(int32_t state) const {
  return {state_stacks_.data() + state_begin_[state],
          static_cast<size_t>(state_begin_[state + 1] - state_begin_[state])};
}

void Automaton::closure(int32_t pos, int32_t parent, std::vector<int32_t>& out) {
  work_.assign(1, {pos, parent});
  while (!work_.empty()) {
    auto [p, par] = work_.back();
    work_.pop_back();
    if (!visited_.insert(pair_key(p, par)).second) continue;
    const int32_t e = bnf_.elems[p];
    if (e >= 0) {
      out.push_back(node(p, par));
    } else if (e == kEnd) {
      if (par < 0) {
        out.push_back(par);  // kAccept or kBottom
      } else {
        work_.emplace_back(node_pos_[par], node_parent_[par]);
      }
    } else {
      const int32_t r = Bnf::ref_rule(e);
      // A reference in the last position returns straight to the caller (no stack growth).
      const int32_t ret = bnf_.elems[p + 1] == kEnd ? par : node(p + 1, par);
      for (int32_t a = bnf_.rule_alt_begin[r]; a < bnf_.rule_alt_begin[r + 1]; ++a) {
        work_.emplace_back(bnf_.alt_begin[a], ret);
      }
    }
  }
}

int32_t Automaton::step_slow(int32_t state, uint8_t byte) {
  int32_t off = trans_offset_[state];
  visited_.clear();
  out_.clear();
  for (int32_t s : stacks(state)) {
    if (s < 0) continue;
    const int32_t p = node_pos_[s];
    if (bnf_.sets[bnf_.elems[p]].has(byte)) closure(p + 1, node_parent_[s], out_);
  }
  std::vector<int32_t> next = out_;
  const int32_t id = intern_state(next);
  if (off < 0) {
    off = static_cast<int32_t>(trans_.size());
    trans_.resize(trans_.size() + 256, -1);
    trans_offset_[state] = off;
  }
  trans_[off + byte] = id;
  return id;
}

int32_t Automaton::walk(int32_t state, std::string_view bytes) {
  for (char c : bytes) {
    if (state == kDead) return kDead;
    state = step(state, static_cast<uint8_t>(c));
  }
  return state;
}

int32_t Automaton::truncated_state(int32_t state, int32_t depth) {
  std::vector<int32_t> cut;
  std::vector<int32_t> chain;  // positions, top first
  const std::span<const int32_t> live = stacks(state);
  const std::vector<int32_t> own(live.begin(), live.end());  // node() may not add states, but copy
  for (int32_t stack : own) {
    chain.clear();
    int32_t s = stack;
    while (s >= 0 && static_cast<int32_t>(chain.size()) < depth) {
      chain.push_back(node_pos_[s]);
      s = node_parent_[s];
    }
    int32_t t = s < 0 ? s : kBottom;
    for (size_t i = chain.size(); i-- > 0;) t = node(chain[i], t);
    cut.push_back(t);
  }
  return intern_state(cut);
}

}  // namespace dss::grammar
