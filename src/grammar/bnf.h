// Bnf: the flat grammar the automaton (automaton.h) runs, lowered from a GrammarIr.
//
// Every rule is a list of alternatives; an alternative is a run of elements in `elems` ended by
// kEnd. An element is a terminal (index into `sets`, >= 0), kEnd, or a rule reference
// (kRefBase - rule). Repetition becomes helper rules: x* -> H ::= x H | "", x{m,n} -> m copies
// of x, then a chain O_k ::= x O_{k-1} | "". Recursion in the tail position (H above) costs no
// stack in the automaton; recursion that needs a return address while consuming nothing (left
// recursion, `expr ::= expr "+" term`) is rejected by lower_grammar.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "grammar/expr.h"

namespace dss::grammar {

inline constexpr int32_t kEnd = -1;
inline constexpr int32_t kRefBase = -2;  // element kRefBase - r references rule r

struct Bnf {
  std::vector<ByteSet> sets;            // [n_sets] terminals, deduplicated
  std::vector<int32_t> elems;           // all alternatives back to back, each ended by kEnd
  std::vector<int32_t> alt_begin;       // [n_alts] index in elems of each alternative's start
  std::vector<int32_t> rule_alt_begin;  // [n_rules + 1] alternatives of rule r: [b[r], b[r+1])
  std::vector<std::string> rule_names;  // [n_rules]
  int32_t root = 0;

  int32_t n_rules() const { return static_cast<int32_t>(rule_names.size()); }
  static bool is_ref(int32_t e) { return e <= kRefBase; }
  static int32_t ref_rule(int32_t e) { return kRefBase - e; }
};

// Lowers `ir`. Errors: a referenced rule that is never defined ("undefined rule 'x'"), a missing
// root, left recursion ("rule 'expr' is left-recursive"), or a grammar over kMaxElems elements.
Result<Bnf> lower_grammar(const GrammarIr& ir);

inline constexpr int32_t kMaxElems = 4 << 20;

}  // namespace dss::grammar
