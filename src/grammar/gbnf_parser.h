// GBNF (llama.cpp's grammar format) -> grammar IR.
//
//   root   ::= item ("," ws item)*      # the rule named "root" is the start
//   item   ::= "lit\n" | [a-z0-9_] | [^"\\] | . | name | ( ... ) | x* | x+ | x? | x{m} | x{m,n}
//
// Literals and classes are over code points (UTF-8 text; escapes \n \r \t \\ \" \[ \] \xHH
// \uHHHH \UHHHHHHHH); '.' is any code point. A rule's alternatives may continue on the next line
// after '|' or inside parentheses; '#' starts a comment. Errors name the line and column
// ("gbnf: 3:14: undefined rule 'valu'"). Left-recursive rules are rejected (bnf.h).
// Not supported yet: token references (<[id]>, <name>).
#pragma once

#include <string_view>

#include "base/status.h"
#include "grammar/expr.h"

namespace dss::grammar {

inline constexpr int32_t kMaxGbnfRepeat = 1000;
// Deepest nesting of parentheses accepted: the parser recurses once per level, so thousands of
// '(' would otherwise overflow the stack of the thread that compiles the grammar.
inline constexpr int32_t kMaxGbnfDepth = 256;
// Most rules a grammar may define: compile time grows faster than linearly with a chain of
// non-tail references (r_i ::= r_{i+1} "b": 1.2 s at 10,000 rules, 28.5 s at 50,000, which a
// 1 MiB request can hold), and real grammars have tens.
inline constexpr int32_t kMaxGbnfRules = 4096;

Result<GrammarIr> parse_gbnf(std::string_view text);

}  // namespace dss::grammar
