// JsonRules: the lexical pieces of JSON text as grammar rules, shared by the JSON Schema
// compiler and the json_object mode, under one whitespace policy.
//
// Whitespace (JsonWhitespace): kCompact (default) allows exactly one optional space after ':' and
// after ',' and nowhere else ({"a": 1, "b": [1, 2]} and {"a":1,"b":[1,2]} both match, newlines
// and indentation do not), so a model cannot pad a document with unbounded whitespace; kNone
// allows no whitespace at all.
// Strings: any code point except '"', '\' and controls, or one of the escapes \" \\ \/ \b \f \n \r
// \t \uXXXX (XXXX not a surrogate, so every escape decodes to exactly one character and length
// limits count what a validator counts).
// Numbers: JSON numbers with at most 15 integer digits and at most 2 exponent digits, so every
// generated number is a finite double and every integer is exact.
#pragma once

#include <cstdint>

#include "grammar/expr.h"
#include "grammar/utf8_ranges.h"

namespace dss::grammar {

enum class JsonWhitespace : uint8_t { kCompact, kNone };

inline constexpr int64_t kMaxJsonInteger = 999'999'999'999'999;  // 15 digits

class JsonRules {
 public:
  JsonRules(GrammarIr& ir, JsonWhitespace ws) : ir_(ir), ws_(ws) {}

  Expr colon();  // ":" and the policy's optional space
  Expr comma();  // "," and the policy's optional space
  // One JSON string character (raw or escaped) of the code points in `set`; the specials '"',
  // '\' and controls become their canonical escape (\" \\ \n ... \u00XX).
  static Expr string_chars(const CodepointSet& set);
  Expr any_string_char();  // any character, any escape
  Expr string_rule();      // rule: a whole JSON string
  Expr number_rule();      // rule: a JSON number
  Expr integer_rule();     // rule: an integer within +-kMaxJsonInteger
  Expr value_rule();       // rule: any JSON value
  Expr object_rule();      // rule: any JSON object

 private:
  int32_t define_once(int32_t& slot, const char* name, Expr (JsonRules::*body)());
  Expr string_body();
  Expr number_body();
  Expr integer_body();
  Expr value_body();
  Expr object_body();
  Expr array_body();

  GrammarIr& ir_;
  JsonWhitespace ws_;
  int32_t string_ = -1, number_ = -1, integer_ = -1, value_ = -1, object_ = -1, array_ = -1;
};

}  // namespace dss::grammar
