// The grammar IR every front end (GBNF, regex, JSON Schema) produces: named rules whose bodies are
// expression trees of sequences, alternatives and bounded or unbounded repetition over byte sets
// and rule references. Terminals are single bytes; code-point classes are expanded into UTF-8 byte
// sequences by utf8_ranges.h before they reach the IR. bnf.h lowers this tree into the flat form
// the automaton runs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dss::grammar {

// A set of bytes (one terminal of the grammar).
struct ByteSet {
  std::array<uint64_t, 4> words = {};

  void set(uint8_t b) { words[b >> 6] |= uint64_t{1} << (b & 63); }
  void set_range(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) set(static_cast<uint8_t>(b));
  }
  bool has(uint8_t b) const { return (words[b >> 6] >> (b & 63)) & 1; }
  bool empty() const { return (words[0] | words[1] | words[2] | words[3]) == 0; }
  bool operator==(const ByteSet&) const = default;
};

enum class ExprKind : uint8_t { kEmpty, kBytes, kRuleRef, kSeq, kAlt, kRepeat };

inline constexpr int32_t kUnbounded = -1;  // Expr::max of `x*` and `x{m,}`

struct Expr {
  ExprKind kind = ExprKind::kEmpty;
  ByteSet bytes;            // kBytes: matches one byte of this set
  int32_t rule = -1;        // kRuleRef: index into GrammarIr::bodies
  int32_t min = 0;          // kRepeat: at least min copies ...
  int32_t max = 0;          // ... and at most max (kUnbounded: no limit)
  std::vector<Expr> items;  // kSeq, kAlt: the parts; kRepeat: exactly one item

  static Expr empty() { return {}; }
  static Expr byte_set(const ByteSet& s);
  static Expr byte(uint8_t b);
  static Expr literal(std::string_view bytes);  // sequence of exact bytes
  static Expr ref(int32_t rule);
  static Expr seq(std::vector<Expr> items);
  static Expr alt(std::vector<Expr> items);
  // x{min,max}; max == kUnbounded for x{min,}. Precondition: 0 <= min, max < 0 or min <= max.
  static Expr repeat(Expr x, int32_t min, int32_t max);
  // Any one of `strings`, as a prefix tree (alternatives that share a prefix share its path, so
  // the automaton follows one stack instead of one per string). Duplicates are harmless.
  static Expr literals(std::vector<std::string> strings);
  static Expr optional(Expr x) { return repeat(std::move(x), 0, 1); }
  static Expr star(Expr x) { return repeat(std::move(x), 0, kUnbounded); }
  static Expr plus(Expr x) { return repeat(std::move(x), 1, kUnbounded); }
};

// Named rules; `root` is where matching starts. Front ends reference rules before defining
// them (recursive grammars, $ref); lowering (bnf.h) reports a rule that was never defined.
struct GrammarIr {
  std::vector<std::string> names;  // [n_rules]
  std::vector<Expr> bodies;        // [n_rules]
  std::vector<bool> defined;       // [n_rules]
  int32_t root = -1;
  std::unordered_map<std::string, int32_t> by_name;  // names -> index

  // Index of the rule `name`, adding an undefined one on first use.
  int32_t rule_id(const std::string& name);
  // Adds a rule with a fresh name derived from `hint` (used by generators for helper rules).
  int32_t new_rule(const std::string& hint);
  void define(int32_t rule, Expr body);
  // Copies every rule of `other` into this IR under the names `prefix` + name (rule references
  // remapped) and returns the index of other's root. Used to embed a JSON Schema's grammar in a
  // larger one (tool-call arguments). Precondition: other.root >= 0; no name prefix + name is
  // already in use here.
  int32_t import(const GrammarIr& other, const std::string& prefix);
};

}  // namespace dss::grammar
