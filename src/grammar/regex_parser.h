// Regular expressions -> grammar IR. The subset: literals, escapes (\n \r \t \f \v \0 \xHH
// \uHHHH \u{H..} and escaped punctuation), classes [a-z] [^...] with \d \w \s \D \W \S inside or
// outside, '.', alternation, groups (...) and (?:...), quantifiers * + ? {m} {m,} {m,n} (a lazy
// '?' suffix is accepted: same language). '^' as the first and '$' as the last character are
// anchors; everywhere else, and backreferences, lookaround, \b, named groups and flags, are
// errors that name the construct.
//
// Character semantics are the intersection of ECMAScript (/u, what JSON Schema validators use)
// and Python `re` with re.ASCII, so a generated string matches under both: \d = [0-9],
// \w = [A-Za-z0-9_], \s = [ \t\n\r\f\v]; \D and \W are their complements; \S excludes every
// character either engine calls whitespace; '.' is any character except \n \r U+2028 U+2029.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "base/status.h"
#include "grammar/expr.h"
#include "grammar/utf8_ranges.h"

namespace dss::grammar {

// How a set of characters becomes grammar: UTF-8 bytes (utf8_expr) for plain text, or JSON
// string characters (JsonRules::string_chars) inside a JSON string.
using CharEncoder = std::function<Expr(const CodepointSet&)>;

struct ParsedRegex {
  Expr expr;
  bool anchored_start = false;  // the pattern began with '^'
  bool anchored_end = false;    // the pattern ended with '$'
};

inline constexpr int32_t kMaxRegexRepeat = 1000;  // largest {m,n} bound accepted
// Deepest nesting of groups accepted: the parser recurses once per level, so a pattern of
// thousands of '(' would otherwise overflow the stack of the thread that compiles it.
inline constexpr int32_t kMaxRegexDepth = 256;

// Errors name the position and the construct: "regex: backreference \\1 at 4 not supported".
Result<ParsedRegex> parse_regex(std::string_view pattern, const CharEncoder& encode);

// The set '.' stands for.
CodepointSet regex_dot_set();

}  // namespace dss::grammar
