#include "grammar/expr.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "base/check.h"

namespace dss::grammar {

Expr Expr::byte_set(const ByteSet& s) {
  Expr e;
  e.kind = ExprKind::kBytes;
  e.bytes = s;
  return e;
}

Expr Expr::byte(uint8_t b) {
  ByteSet s;
  s.set(b);
  return byte_set(s);
}

Expr Expr::literal(std::string_view bytes) {
  std::vector<Expr> items;
  items.reserve(bytes.size());
  for (char c : bytes) items.push_back(byte(static_cast<uint8_t>(c)));
  return seq(std::move(items));
}

namespace {

// Strings sorted[begin, end) share their first `depth` bytes; the rest as a prefix tree.
Expr literal_tree(const std::vector<std::string>& sorted, size_t begin, size_t end, size_t depth) {
  std::vector<Expr> alts;
  size_t i = begin;
  if (sorted[i].size() == depth) {
    alts.push_back(Expr::empty());
    while (i < end && sorted[i].size() == depth) ++i;
  }
  while (i < end) {
    const char b = sorted[i][depth];
    size_t j = i;
    while (j < end && sorted[j][depth] == b) ++j;
    // Extend the shared run while the group has one next byte and no string ends.
    size_t d = depth + 1;
    while (sorted[i].size() > d && sorted[j - 1].size() > d && sorted[i][d] == sorted[j - 1][d] &&
           std::all_of(sorted.begin() + i, sorted.begin() + j,
                       [&](const std::string& s) { return s.size() > d; })) {
      ++d;
    }
    alts.push_back(Expr::seq({Expr::literal(std::string_view(sorted[i]).substr(depth, d - depth)),
                              literal_tree(sorted, i, j, d)}));
    i = j;
  }
  return Expr::alt(std::move(alts));
}

}  // namespace

Expr Expr::literals(std::vector<std::string> strings) {
  if (strings.empty()) return alt({});
  std::sort(strings.begin(), strings.end());
  return literal_tree(strings, 0, strings.size(), 0);
}

Expr Expr::ref(int32_t rule) {
  Expr e;
  e.kind = ExprKind::kRuleRef;
  e.rule = rule;
  return e;
}

Expr Expr::seq(std::vector<Expr> items) {
  if (items.empty()) return empty();
  if (items.size() == 1) return std::move(items[0]);
  Expr e;
  e.kind = ExprKind::kSeq;
  e.items = std::move(items);
  return e;
}

Expr Expr::alt(std::vector<Expr> items) {
  if (items.size() == 1) return std::move(items[0]);
  Expr e;
  e.kind = ExprKind::kAlt;  // zero items: matches nothing
  e.items = std::move(items);
  return e;
}

Expr Expr::repeat(Expr x, int32_t min, int32_t max) {
  DSS_CHECK(min >= 0 && (max == kUnbounded || max >= min), "min=", min, " max=", max);
  if (min == 1 && max == 1) return x;
  if (max == 0) return empty();
  Expr e;
  e.kind = ExprKind::kRepeat;
  e.min = min;
  e.max = max;
  e.items.push_back(std::move(x));
  return e;
}

int32_t GrammarIr::rule_id(const std::string& name) {
  auto it = by_name.find(name);
  if (it != by_name.end()) return it->second;
  by_name.emplace(name, static_cast<int32_t>(names.size()));
  names.push_back(name);
  bodies.push_back(Expr::empty());
  defined.push_back(false);
  return static_cast<int32_t>(names.size() - 1);
}

int32_t GrammarIr::new_rule(const std::string& hint) {
  std::string name = hint + "-" + std::to_string(names.size());
  by_name.emplace(name, static_cast<int32_t>(names.size()));
  names.push_back(name);
  bodies.push_back(Expr::empty());
  defined.push_back(false);
  return static_cast<int32_t>(names.size() - 1);
}

void GrammarIr::define(int32_t rule, Expr body) {
  DSS_CHECK(rule >= 0 && rule < static_cast<int32_t>(bodies.size()), "rule=", rule);
  bodies[rule] = std::move(body);
  defined[rule] = true;
}

namespace {

void remap_rules(Expr& e, const std::vector<int32_t>& to) {
  if (e.kind == ExprKind::kRuleRef) e.rule = to[e.rule];
  for (Expr& item : e.items) remap_rules(item, to);
}

}  // namespace

int32_t GrammarIr::import(const GrammarIr& other, const std::string& prefix) {
  DSS_CHECK(other.root >= 0, "importing an IR without a root");
  std::vector<int32_t> to(other.names.size());
  for (size_t r = 0; r < other.names.size(); ++r) {
    const std::string name = prefix + other.names[r];
    DSS_CHECK(!by_name.contains(name), "rule name in use: ", name);
    to[r] = rule_id(name);
  }
  for (size_t r = 0; r < other.names.size(); ++r) {
    if (!other.defined[r]) continue;  // lowering reports it under its new name
    Expr body = other.bodies[r];
    remap_rules(body, to);
    define(to[r], std::move(body));
  }
  return to[other.root];
}

}  // namespace dss::grammar
