#include "grammar/gbnf_parser.h"

#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "grammar/utf8_ranges.h"

namespace dss::grammar {
namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view t) : t_(t) {}

  Result<GrammarIr> run() {
    skip_space(true);
    while (i_ < t_.size()) {
      DSS_RETURN_IF_ERROR(rule());
      skip_space(true);
    }
    auto it = ir_.by_name.find("root");
    if (it == ir_.by_name.end() || !ir_.defined[it->second]) {
      return Status::error("gbnf: no rule named 'root'");
    }
    ir_.root = it->second;
    for (size_t r = 0; r < ir_.names.size(); ++r) {
      if (!ir_.defined[r]) {
        return Status::error("gbnf: ", ref_where_[r], ": undefined rule '", ir_.names[r], "'");
      }
    }
    return std::move(ir_);
  }

 private:
  std::string where() const {
    int line = 1, col = 1;
    for (size_t k = 0; k < i_ && k < t_.size(); ++k) {
      if (t_[k] == '\n') {
        ++line, col = 1;
      } else {
        ++col;
      }
    }
    return std::to_string(line) + ":" + std::to_string(col);
  }
  Status err(const std::string& what) const { return Status::error("gbnf: ", where(), ": ", what); }

  // Skips spaces and comments; newlines only when `newlines`.
  void skip_space(bool newlines) {
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '#') {
        while (i_ < t_.size() && t_[i_] != '\n') ++i_;
      } else if (c == ' ' || c == '\t' || ((c == '\n' || c == '\r') && newlines)) {
        ++i_;
      } else {
        return;
      }
    }
  }

  std::string name() {
    const size_t b = i_;
    while (i_ < t_.size() && is_name_char(t_[i_])) ++i_;
    return std::string(t_.substr(b, i_ - b));
  }

  Status rule() {
    if (++n_rules_ > kMaxGbnfRules)
      return err("more than " + std::to_string(kMaxGbnfRules) + " rules");
    const std::string n = name();
    if (n.empty()) return err("expected a rule name");
    skip_space(false);
    if (t_.compare(i_, 3, "::=") != 0) return err("expected '::=' after '" + n + "'");
    i_ += 3;
    skip_space(true);
    const int32_t id = ref(n);
    if (ir_.defined[id]) return err("rule '" + n + "' defined twice");
    DSS_ASSIGN_OR_RETURN(Expr body, alternatives(false));
    ir_.define(id, std::move(body));
    if (i_ < t_.size() && t_[i_] != '\n' && t_[i_] != '\r') return err("unexpected character");
    return Status::ok();
  }

  int32_t ref(const std::string& n) {
    const int32_t id = ir_.rule_id(n);
    if (static_cast<size_t>(id) >= ref_where_.size()) ref_where_.resize(id + 1, where());
    return id;
  }

  Result<Expr> alternatives(bool nested) {
    std::vector<Expr> alts;
    for (;;) {
      DSS_ASSIGN_OR_RETURN(Expr s, sequence(nested));
      alts.push_back(std::move(s));
      if (i_ < t_.size() && t_[i_] == '|') {
        ++i_;
        skip_space(true);
        continue;
      }
      return Expr::alt(std::move(alts));
    }
  }

  Result<Expr> sequence(bool nested) {
    std::vector<Expr> items;
    for (;;) {
      skip_space(nested);
      if (i_ >= t_.size()) break;
      const char c = t_[i_];
      if (c == '|' || c == ')' || c == '\n' || c == '\r') break;
      // A new rule starts on this line: "name ::=" (only reachable with nested == false).
      DSS_ASSIGN_OR_RETURN(Expr a, atom(nested));
      skip_space(nested);
      DSS_ASSIGN_OR_RETURN(Expr q, quantified(std::move(a)));
      items.push_back(std::move(q));
    }
    return Expr::seq(std::move(items));
  }

  Result<Expr> quantified(Expr a) {
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '*') {
        a = Expr::star(std::move(a));
      } else if (c == '+') {
        a = Expr::plus(std::move(a));
      } else if (c == '?') {
        a = Expr::optional(std::move(a));
      } else if (c == '{') {
        ++i_;
        int32_t lo = 0, hi = 0;
        if (!number(lo)) return Status(err("expected a number in {m,n}"));
        hi = lo;
        skip_space(false);
        if (i_ < t_.size() && t_[i_] == ',') {
          ++i_;
          skip_space(false);
          hi = kUnbounded;
          if (i_ < t_.size() && t_[i_] != '}' && !number(hi)) return Status(err("bad {m,n}"));
        }
        skip_space(false);
        if (i_ >= t_.size() || t_[i_] != '}') return Status(err("expected '}'"));
        if (hi != kUnbounded && hi < lo) return Status(err("{m,n} with n < m"));
        a = Expr::repeat(std::move(a), lo, hi);
      } else {
        break;
      }
      ++i_;
    }
    return a;
  }

  bool number(int32_t& v) {
    skip_space(false);
    if (i_ >= t_.size() || !std::isdigit(static_cast<unsigned char>(t_[i_]))) return false;
    v = 0;
    while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_]))) {
      v = v * 10 + (t_[i_++] - '0');
      if (v > kMaxGbnfRepeat) return false;
    }
    return true;
  }

  Result<Expr> atom(bool /*nested*/) {
    const char c = t_[i_];
    if (c == '"') return literal();
    if (c == '[') return char_class();
    if (c == '.') {
      ++i_;
      CodepointSet all;
      all.add(0, kMaxCodepoint);
      return utf8_expr(all);
    }
    if (c == '(') {
      if (depth_ >= kMaxGbnfDepth) {
        return Status(err("parentheses nested deeper than " + std::to_string(kMaxGbnfDepth)));
      }
      ++i_;
      skip_space(true);
      ++depth_;
      DSS_ASSIGN_OR_RETURN(Expr e, alternatives(true));
      --depth_;
      if (i_ >= t_.size() || t_[i_] != ')') return Status(err("expected ')'"));
      ++i_;
      return e;
    }
    if (c == '<') return Status(err("token references (<...>) not supported"));
    if (is_name_char(c)) {
      const size_t save = i_;
      const std::string n = name();
      const size_t after = i_;
      skip_space(false);
      if (t_.compare(i_, 3, "::=") == 0) {
        i_ = save;
        return Status(err("expected a newline before rule '" + n + "'"));
      }
      i_ = after;
      return Expr::ref(ref(n));
    }
    return Status(err(std::string("unexpected '") + c + "'"));
  }

  // One possibly escaped code point of a literal or class.
  Status one_char(uint32_t& cp) {
    if (t_[i_] != '\\') {
      if (!decode_utf8(t_, i_, cp)) return err("invalid UTF-8");
      return Status::ok();
    }
    if (++i_ >= t_.size()) return err("trailing '\\'");
    const char e = t_[i_++];
    int hex = 0;
    switch (e) {
      case 'n':
        cp = '\n';
        return Status::ok();
      case 'r':
        cp = '\r';
        return Status::ok();
      case 't':
        cp = '\t';
        return Status::ok();
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '^':
        cp = static_cast<uint8_t>(e);
        return Status::ok();
      case 'x':
        hex = 2;
        break;
      case 'u':
        hex = 4;
        break;
      case 'U':
        hex = 8;
        break;
      default:
        return err(std::string("unknown escape \\") + e);
    }
    cp = 0;
    for (int k = 0; k < hex; ++k) {
      if (i_ >= t_.size() || !std::isxdigit(static_cast<unsigned char>(t_[i_])))
        return err("bad hex escape");
      const char h = t_[i_++];
      cp = cp * 16 + (h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
    }
    if (cp > kMaxCodepoint || (cp >= 0xD800 && cp <= 0xDFFF))
      return err("escape is not a character");
    return Status::ok();
  }

  Result<Expr> literal() {
    ++i_;
    std::string bytes;
    while (i_ < t_.size() && t_[i_] != '"') {
      if (t_[i_] == '\n') return Status(err("newline in a literal"));
      uint32_t cp;
      DSS_RETURN_IF_ERROR(one_char(cp));
      append_utf8(cp, bytes);
    }
    if (i_ >= t_.size()) return Status(err("unterminated literal"));
    ++i_;
    return Expr::literal(bytes);
  }

  Result<Expr> char_class() {
    ++i_;
    bool negate = false;
    if (i_ < t_.size() && t_[i_] == '^') {
      negate = true;
      ++i_;
    }
    CodepointSet set;
    while (i_ < t_.size() && t_[i_] != ']') {
      uint32_t lo;
      DSS_RETURN_IF_ERROR(one_char(lo));
      uint32_t hi = lo;
      if (i_ + 1 < t_.size() && t_[i_] == '-' && t_[i_ + 1] != ']') {
        ++i_;
        DSS_RETURN_IF_ERROR(one_char(hi));
        if (hi < lo) return Status(err("class range out of order"));
      }
      set.add(lo, hi);
    }
    if (i_ >= t_.size()) return Status(err("unterminated class"));
    ++i_;
    if (negate) set = set.complement();
    if (set.empty()) return Status(err("empty class"));
    return utf8_expr(set);
  }

  std::string_view t_;
  size_t i_ = 0;
  int32_t depth_ = 0;
  int32_t n_rules_ = 0;  // rules defined so far
  GrammarIr ir_;
  std::vector<std::string> ref_where_;  // [n_rules] position of the first mention
};

}  // namespace

Result<GrammarIr> parse_gbnf(std::string_view text) { return GbnfParser(text).run(); }

}  // namespace dss::grammar
