#include "grammar/json_rules.h"

#include <utility>
#include <vector>

namespace dss::grammar {
namespace {

Expr bytes_in(uint8_t lo, uint8_t hi) {
  ByteSet s;
  s.set_range(lo, hi);
  return Expr::byte_set(s);
}

Expr hex_digit() {
  ByteSet s;
  s.set_range('0', '9');
  s.set_range('a', 'f');
  s.set_range('A', 'F');
  return Expr::byte_set(s);
}

// Four hex digits that are not a surrogate (D800-DFFF).
Expr hex4_no_surrogate() {
  ByteSet not_d;
  not_d.set_range('0', '9');
  not_d.set_range('a', 'c');
  not_d.set_range('A', 'C');
  not_d.set_range('e', 'f');
  not_d.set_range('E', 'F');
  ByteSet d;
  d.set('d');
  d.set('D');
  return Expr::alt({
      Expr::seq({Expr::byte_set(not_d), Expr::repeat(hex_digit(), 3, 3)}),
      Expr::seq({Expr::byte_set(d), bytes_in('0', '7'), Expr::repeat(hex_digit(), 2, 2)}),
  });
}

const char* short_escape(uint32_t c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return nullptr;
  }
}

}  // namespace

Expr JsonRules::colon() {
  if (ws_ == JsonWhitespace::kNone) return Expr::byte(':');
  return Expr::seq({Expr::byte(':'), Expr::optional(Expr::byte(' '))});
}

Expr JsonRules::comma() {
  if (ws_ == JsonWhitespace::kNone) return Expr::byte(',');
  return Expr::seq({Expr::byte(','), Expr::optional(Expr::byte(' '))});
}

Expr JsonRules::string_chars(const CodepointSet& set) {
  CodepointSet special;
  special.add(0, 0x1F);
  special.add('"');
  special.add('\\');
  std::vector<Expr> alts;
  CodepointSet raw = set.minus(special);
  if (!raw.empty()) alts.push_back(utf8_expr(raw));
  for (uint32_t c = 0; c < 0x60; ++c) {
    if (!special.contains(c) || !set.contains(c)) continue;
    if (const char* e = short_escape(c)) {
      alts.push_back(Expr::literal(e));
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      const char esc[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15], 0};
      alts.push_back(Expr::literal(esc));
    }
  }
  return Expr::alt(std::move(alts));
}

Expr JsonRules::any_string_char() {
  CodepointSet all;
  all.add(0, kMaxCodepoint);
  CodepointSet special;
  special.add(0, 0x1F);
  special.add('"');
  special.add('\\');
  ByteSet simple;
  for (char c : std::string_view("\"\\/bfnrt")) simple.set(static_cast<uint8_t>(c));
  return Expr::alt({
      utf8_expr(all.minus(special)),
      Expr::seq({Expr::byte('\\'), Expr::byte_set(simple)}),
      Expr::seq({Expr::literal("\\u"), hex4_no_surrogate()}),
  });
}

int32_t JsonRules::define_once(int32_t& slot, const char* name, Expr (JsonRules::*body)()) {
  if (slot < 0) {
    slot = ir_.new_rule(name);
    ir_.define(slot, (this->*body)());
  }
  return slot;
}

Expr JsonRules::string_rule() {
  return Expr::ref(define_once(string_, "json-string", &JsonRules::string_body));
}
Expr JsonRules::number_rule() {
  return Expr::ref(define_once(number_, "json-number", &JsonRules::number_body));
}
Expr JsonRules::integer_rule() {
  return Expr::ref(define_once(integer_, "json-integer", &JsonRules::integer_body));
}
Expr JsonRules::object_rule() {
  return Expr::ref(define_once(object_, "json-object", &JsonRules::object_body));
}

Expr JsonRules::value_rule() {
  if (value_ < 0) {
    value_ = ir_.new_rule("json-value");  // reserve first: objects and arrays refer back to it
    array_ = ir_.new_rule("json-array");
    ir_.define(value_, value_body());
    ir_.define(array_, array_body());
  }
  return Expr::ref(value_);
}

Expr JsonRules::string_body() {
  return Expr::seq({Expr::byte('"'), Expr::star(any_string_char()), Expr::byte('"')});
}

Expr JsonRules::integer_body() {
  return Expr::seq(
      {Expr::optional(Expr::byte('-')),
       Expr::alt({Expr::byte('0'),
                  Expr::seq({bytes_in('1', '9'), Expr::repeat(bytes_in('0', '9'), 0, 14)})})});
}

Expr JsonRules::number_body() {
  ByteSet e;
  e.set('e');
  e.set('E');
  ByteSet sign;
  sign.set('+');
  sign.set('-');
  return Expr::seq({
      integer_rule(),
      Expr::optional(Expr::seq({Expr::byte('.'), Expr::plus(bytes_in('0', '9'))})),
      Expr::optional(Expr::seq({Expr::byte_set(e), Expr::optional(Expr::byte_set(sign)),
                                Expr::repeat(bytes_in('0', '9'), 1, 2)})),
  });
}

Expr JsonRules::value_body() {
  return Expr::alt({object_rule(), Expr::ref(array_), string_rule(), number_rule(),
                    Expr::literal("true"), Expr::literal("false"), Expr::literal("null")});
}

Expr JsonRules::object_body() {
  value_rule();
  Expr member = Expr::seq({string_rule(), colon(), Expr::ref(value_)});
  return Expr::seq({Expr::byte('{'),
                    Expr::optional(Expr::seq({member, Expr::star(Expr::seq({comma(), member}))})),
                    Expr::byte('}')});
}

Expr JsonRules::array_body() {
  Expr v = Expr::ref(value_);
  return Expr::seq({Expr::byte('['),
                    Expr::optional(Expr::seq({v, Expr::star(Expr::seq({comma(), v}))})),
                    Expr::byte(']')});
}

}  // namespace dss::grammar
