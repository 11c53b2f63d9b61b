// Sets of Unicode code points and their expansion into UTF-8 byte-sequence alternatives, so
// grammars written over characters ("[^\"]", ".", "[a-zé]") run on the byte-level vocabulary.
// Surrogates (U+D800..U+DFFF) are never produced: they are not valid in UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/expr.h"

namespace dss::grammar {

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

class CodepointSet {
 public:
  void add(uint32_t lo, uint32_t hi);  // inclusive; precondition lo <= hi <= kMaxCodepoint
  void add(uint32_t c) { add(c, c); }
  void add(const CodepointSet& other);
  // Every code point (surrogates excluded) not in this set.
  CodepointSet complement() const;
  CodepointSet minus(const CodepointSet& other) const;
  bool contains(uint32_t c) const;
  bool empty() const { return ranges_.empty(); }
  // Sorted, disjoint, non-adjacent inclusive ranges.
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }

 private:
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
};

// An expression matching exactly the UTF-8 encodings of the set's code points.
Expr utf8_expr(const CodepointSet& set);

// Appends the UTF-8 encoding of c (precondition: c <= kMaxCodepoint, not a surrogate).
void append_utf8(uint32_t c, std::string& out);

// Decodes one code point of `s` at `i` (advancing i); returns false on ill-formed UTF-8.
bool decode_utf8(std::string_view s, size_t& i, uint32_t& c);

}  // namespace dss::grammar
