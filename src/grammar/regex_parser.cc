#include "grammar/regex_parser.h"

#include <cctype>
#include <string>
#include <utility>
#include <vector>

namespace dss::grammar {
namespace {

CodepointSet digit_set() {
  CodepointSet s;
  s.add('0', '9');
  return s;
}

CodepointSet word_set() {
  CodepointSet s;
  s.add('0', '9');
  s.add('A', 'Z');
  s.add('a', 'z');
  s.add('_');
  return s;
}

CodepointSet space_set() {
  CodepointSet s;
  s.add('\t', '\r');  // \t \n \v \f \r
  s.add(' ');
  return s;
}

// Whitespace under either engine (ECMAScript \s, Python's str.isspace).
CodepointSet any_space_set() {
  CodepointSet s = space_set();
  for (uint32_t c : {0x1Cu, 0x1Du, 0x1Eu, 0x1Fu, 0x85u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu,
                     0x205Fu, 0x3000u, 0xFEFFu}) {
    s.add(c);
  }
  s.add(0x2000, 0x200A);
  return s;
}

class RegexParser {
 public:
  RegexParser(std::string_view p, const CharEncoder& enc) : p_(p), enc_(enc) {}

  Result<ParsedRegex> run() {
    ParsedRegex out;
    if (!p_.empty() && p_[0] == '^') {
      out.anchored_start = true;
      ++i_;
    }
    if (p_.size() > i_ && p_.back() == '$' && !escaped_at(p_.size() - 1)) {
      out.anchored_end = true;
      p_.remove_suffix(1);
    }
    DSS_ASSIGN_OR_RETURN(out.expr, alternation());
    if (i_ < p_.size()) return err("unbalanced ')'");
    return out;
  }

 private:
  bool escaped_at(size_t k) const {
    size_t n = 0;
    while (k > n && p_[k - n - 1] == '\\') ++n;
    return n % 2 == 1;
  }

  Status err(const std::string& what) const { return Status::error("regex: ", what, " at ", i_); }

  Result<Expr> alternation() {
    std::vector<Expr> alts;
    for (;;) {
      DSS_ASSIGN_OR_RETURN(Expr s, sequence());
      alts.push_back(std::move(s));
      if (i_ < p_.size() && p_[i_] == '|') {
        ++i_;
        continue;
      }
      return Expr::alt(std::move(alts));
    }
  }

  Result<Expr> sequence() {
    std::vector<Expr> items;
    while (i_ < p_.size() && p_[i_] != '|' && p_[i_] != ')') {
      DSS_ASSIGN_OR_RETURN(Expr a, atom());
      DSS_ASSIGN_OR_RETURN(Expr q, quantified(std::move(a)));
      items.push_back(std::move(q));
    }
    return Expr::seq(std::move(items));
  }

  Result<Expr> quantified(Expr a) {
    while (i_ < p_.size()) {
      const char c = p_[i_];
      int32_t lo = 0, hi = 0;
      if (c == '*') {
        lo = 0, hi = kUnbounded, ++i_;
      } else if (c == '+') {
        lo = 1, hi = kUnbounded, ++i_;
      } else if (c == '?') {
        lo = 0, hi = 1, ++i_;
      } else if (c == '{') {
        DSS_RETURN_IF_ERROR(braces(lo, hi));
      } else {
        break;
      }
      if (i_ < p_.size() && p_[i_] == '?') ++i_;  // lazy: same language
      if (i_ < p_.size() && (p_[i_] == '*' || p_[i_] == '+' || p_[i_] == '{')) {
        return Status(err("nested quantifier"));
      }
      a = Expr::repeat(std::move(a), lo, hi);
    }
    return a;
  }

  Status braces(int32_t& lo, int32_t& hi) {
    const size_t start = i_++;
    auto number = [&](int32_t& v) {
      if (i_ >= p_.size() || p_[i_] < '0' || p_[i_] > '9') return false;
      v = 0;
      while (i_ < p_.size() && p_[i_] >= '0' && p_[i_] <= '9') {
        v = v * 10 + (p_[i_++] - '0');
        if (v > kMaxRegexRepeat) return false;
      }
      return true;
    };
    if (!number(lo)) {
      i_ = start;
      return err("bad or too large repetition bound (limit " + std::to_string(kMaxRegexRepeat) +
                 ")");
    }
    hi = lo;
    if (i_ < p_.size() && p_[i_] == ',') {
      ++i_;
      hi = kUnbounded;
      if (i_ < p_.size() && p_[i_] != '}' && !number(hi)) {
        return err("bad or too large repetition bound");
      }
    }
    if (i_ >= p_.size() || p_[i_] != '}') return err("unterminated '{'");
    ++i_;
    if (hi != kUnbounded && hi < lo) return err("repetition {m,n} with n < m");
    return Status::ok();
  }

  Result<Expr> atom() {
    const char c = p_[i_];
    if (c == '(') {
      ++i_;
      if (i_ < p_.size() && p_[i_] == '?') {
        if (i_ + 1 < p_.size() && p_[i_ + 1] == ':') {
          i_ += 2;
        } else {
          return Status(err("group syntax '(?' (lookaround, named group or flags) not supported"));
        }
      }
      if (depth_ >= kMaxRegexDepth) {
        return Status(err("groups nested deeper than " + std::to_string(kMaxRegexDepth)));
      }
      ++depth_;
      DSS_ASSIGN_OR_RETURN(Expr e, alternation());
      --depth_;
      if (i_ >= p_.size() || p_[i_] != ')') return Status(err("missing ')'"));
      ++i_;
      return e;
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++i_;
      return enc_(regex_dot_set());
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') return Status(err("nothing to repeat"));
    if (c == '^' || c == '$') return Status(err("anchor inside the pattern not supported"));
    CodepointSet s;
    DSS_RETURN_IF_ERROR(one_char(s, false));
    return enc_(s);
  }

  // One literal character or escape into `s` (inside a class when in_class).
  Status one_char(CodepointSet& s, bool in_class) {
    if (p_[i_] != '\\') {
      uint32_t cp;
      if (!decode_utf8(p_, i_, cp)) return err("invalid UTF-8");
      s.add(cp);
      return Status::ok();
    }
    if (++i_ >= p_.size()) return err("trailing '\\'");
    const char e = p_[i_++];
    switch (e) {
      case 'd':
        s.add(digit_set());
        return Status::ok();
      case 'D':
        s.add(digit_set().complement());
        return Status::ok();
      case 'w':
        s.add(word_set());
        return Status::ok();
      case 'W':
        s.add(word_set().complement());
        return Status::ok();
      case 's':
        s.add(space_set());
        return Status::ok();
      case 'S':
        s.add(any_space_set().complement());
        return Status::ok();
      case 'n':
        s.add('\n');
        return Status::ok();
      case 'r':
        s.add('\r');
        return Status::ok();
      case 't':
        s.add('\t');
        return Status::ok();
      case 'f':
        s.add('\f');
        return Status::ok();
      case 'v':
        s.add('\v');
        return Status::ok();
      case '0':
        s.add(0);
        return Status::ok();
      case 'x':
        return hex_escape(s, 2);
      case 'u':
        if (i_ < p_.size() && p_[i_] == '{') return braced_hex(s);
        return hex_escape(s, 4);
      case 'b':
        if (in_class) {
          s.add('\b');
          return Status::ok();
        }
        return err("word boundary \\b not supported");
      default:
        break;
    }
    if (e >= '1' && e <= '9') return err(std::string("backreference \\") + e + " not supported");
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
      return err(std::string("escape \\") + e + " not supported");
    }
    --i_;
    uint32_t cp;
    if (!decode_utf8(p_, i_, cp)) return err("invalid UTF-8");
    s.add(cp);
    return Status::ok();
  }

  Status hex_escape(CodepointSet& s, int n) {
    uint32_t v = 0;
    for (int k = 0; k < n; ++k) {
      if (i_ >= p_.size() || !std::isxdigit(static_cast<unsigned char>(p_[i_]))) {
        return err("bad hex escape");
      }
      v = v * 16 + hex_value(p_[i_++]);
    }
    return add_codepoint(s, v);
  }

  Status braced_hex(CodepointSet& s) {
    ++i_;
    uint32_t v = 0;
    int n = 0;
    while (i_ < p_.size() && p_[i_] != '}') {
      if (!std::isxdigit(static_cast<unsigned char>(p_[i_])) || ++n > 6) return err("bad \\u{...}");
      v = v * 16 + hex_value(p_[i_++]);
    }
    if (i_ >= p_.size() || n == 0) return err("bad \\u{...}");
    ++i_;
    return add_codepoint(s, v);
  }

  Status add_codepoint(CodepointSet& s, uint32_t v) {
    if (v > kMaxCodepoint || (v >= 0xD800 && v <= 0xDFFF)) return err("escape is not a character");
    s.add(v);
    return Status::ok();
  }

  static uint32_t hex_value(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

  Result<Expr> char_class() {
    ++i_;
    bool negate = false;
    if (i_ < p_.size() && p_[i_] == '^') {
      negate = true;
      ++i_;
    }
    CodepointSet set;
    while (i_ < p_.size() && p_[i_] != ']') {
      CodepointSet lo;
      const bool single_lo = p_[i_] != '\\' || !is_shorthand(i_ + 1);
      DSS_RETURN_IF_ERROR(one_char(lo, true));
      if (i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']') {
        ++i_;
        CodepointSet hi;
        const bool single_hi = p_[i_] != '\\' || !is_shorthand(i_ + 1);
        DSS_RETURN_IF_ERROR(one_char(hi, true));
        if (!single_lo || !single_hi) return Status(err("class range with \\d, \\w or \\s"));
        const uint32_t a = lo.ranges()[0].first, b = hi.ranges()[0].first;
        if (a > b) return Status(err("class range out of order"));
        set.add(a, b);
      } else {
        set.add(lo);
      }
    }
    if (i_ >= p_.size()) return Status(err("missing ']'"));
    ++i_;
    if (set.empty() && !negate) return Status(err("empty class []"));
    if (negate) set = set.complement();
    return enc_(set);
  }

  bool is_shorthand(size_t k) const {
    if (k >= p_.size()) return false;
    const char c = p_[k];
    return c == 'd' || c == 'D' || c == 'w' || c == 'W' || c == 's' || c == 'S';
  }

  std::string_view p_;
  const CharEncoder& enc_;
  size_t i_ = 0;
  int32_t depth_ = 0;  // groups open at i_
};

}  // namespace

CodepointSet regex_dot_set() {
  CodepointSet not_dot;
  not_dot.add('\n');
  not_dot.add('\r');
  not_dot.add(0x2028, 0x2029);
  return not_dot.complement();
}

Result<ParsedRegex> parse_regex(std::string_view pattern, const CharEncoder& encode) {
  return RegexParser(pattern, encode).run();
}

}  // namespace dss::grammar
