#include "grammar/bnf.h"

#include <utility>

#include "base/check.h"

namespace dss::grammar {
namespace {

using Alt = std::vector<int32_t>;  // elements of one alternative, without kEnd

class Lowering {
 public:
  explicit Lowering(const GrammarIr& ir) : ir_(ir), rules_(ir.bodies.size()) {}

  Status run() {
    for (size_t r = 0; r < ir_.bodies.size(); ++r) {
      if (!ir_.defined[r]) continue;
      std::vector<Alt> alts;
      lower_alts(ir_.bodies[r], alts);
      rules_[r] = std::move(alts);
    }
    return Status::ok();
  }

  Bnf finish() {
    Bnf out;
    out.sets = std::move(sets_);
    out.root = ir_.root;
    for (size_t r = 0; r < rules_.size(); ++r) {
      out.rule_names.push_back(r < ir_.names.size() ? ir_.names[r]
                                                    : helper_names_[r - ir_.names.size()]);
      out.rule_alt_begin.push_back(static_cast<int32_t>(out.alt_begin.size()));
      for (const Alt& a : rules_[r]) {
        out.alt_begin.push_back(static_cast<int32_t>(out.elems.size()));
        out.elems.insert(out.elems.end(), a.begin(), a.end());
        out.elems.push_back(kEnd);
      }
    }
    out.rule_alt_begin.push_back(static_cast<int32_t>(out.alt_begin.size()));
    return out;
  }

 private:
  int32_t set_id(const ByteSet& s) {
    for (size_t i = 0; i < sets_.size(); ++i) {
      if (sets_[i] == s) return static_cast<int32_t>(i);
    }
    sets_.push_back(s);
    return static_cast<int32_t>(sets_.size() - 1);
  }

  int32_t add_helper(const std::string& hint, std::vector<Alt> alts) {
    rules_.push_back(std::move(alts));
    helper_names_.push_back(hint + "#" + std::to_string(rules_.size() - 1));
    return static_cast<int32_t>(rules_.size() - 1);
  }

  // The alternatives of `e` as a rule body.
  void lower_alts(const Expr& e, std::vector<Alt>& alts) {
    if (e.kind == ExprKind::kAlt) {
      for (const Expr& x : e.items) lower_alts(x, alts);
      return;
    }
    Alt a;
    lower_seq(e, a);
    alts.push_back(std::move(a));
  }

  // Appends the elements of `e` to one alternative.
  void lower_seq(const Expr& e, Alt& out) {
    switch (e.kind) {
      case ExprKind::kEmpty:
        return;
      case ExprKind::kBytes:
        out.push_back(set_id(e.bytes));
        return;
      case ExprKind::kRuleRef:
        out.push_back(kRefBase - e.rule);
        return;
      case ExprKind::kSeq:
        for (const Expr& x : e.items) lower_seq(x, out);
        return;
      case ExprKind::kAlt: {
        std::vector<Alt> alts;
        lower_alts(e, alts);
        if (alts.size() == 1) {
          out.insert(out.end(), alts[0].begin(), alts[0].end());
        } else {
          out.push_back(kRefBase - add_helper("alt", std::move(alts)));
        }
        return;
      }
      case ExprKind::kRepeat:
        lower_repeat(e, out);
        return;
    }
  }

  void lower_repeat(const Expr& e, Alt& out) {
    const Expr& x = e.items[0];
    std::vector<Alt> body;  // x's alternatives
    lower_alts(x, body);
    const bool single = body.size() == 1;
    // The fixed part: min copies (x as one element when it is more than one element).
    if (e.min > 0) {
      Alt once;
      if (single && body[0].size() <= 1) {
        once = body[0];
      } else {
        once.push_back(kRefBase - add_helper("rep", body));
      }
      for (int32_t i = 0; i < e.min; ++i) out.insert(out.end(), once.begin(), once.end());
    }
    if (e.max == kUnbounded) {
      // H ::= x_1 H | ... | x_k H | ""
      const int32_t h = add_helper("star", {});
      std::vector<Alt> alts = body;
      for (Alt& a : alts) a.push_back(kRefBase - h);
      alts.emplace_back();
      rules_[h] = std::move(alts);
      out.push_back(kRefBase - h);
      return;
    }
    // O_1 ::= x | "", O_k ::= x O_{k-1} | "".
    int32_t prev = -1;
    for (int32_t k = 1; k <= e.max - e.min; ++k) {
      std::vector<Alt> alts = body;
      if (prev >= 0) {
        for (Alt& a : alts) a.push_back(kRefBase - prev);
      }
      alts.emplace_back();
      prev = add_helper("opt", std::move(alts));
    }
    if (prev >= 0) out.push_back(kRefBase - prev);
  }

  const GrammarIr& ir_;
  std::vector<std::vector<Alt>> rules_;
  std::vector<std::string> helper_names_;
  std::vector<ByteSet> sets_;
};

// Left recursion that needs a stack: a rule reaches itself through first elements (after
// nullable prefixes) where at least one step leaves a return address (the reference is not the
// last element of its alternative). Such a grammar would make the automaton's closure grow
// without bound.
Status check_left_recursion(const Bnf& g) {
  const int32_t n = g.n_rules();
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (int32_t a = g.rule_alt_begin[r]; a < g.rule_alt_begin[r + 1] && !nullable[r]; ++a) {
        bool all = true;
        for (int32_t i = g.alt_begin[a]; g.elems[i] != kEnd && all; ++i) {
          all = Bnf::is_ref(g.elems[i]) && nullable[Bnf::ref_rule(g.elems[i])];
        }
        if (all) nullable[r] = changed = true;
      }
    }
  }
  struct Edge {
    int32_t to;
    bool push;
  };
  std::vector<std::vector<Edge>> edges(n);
  for (int32_t r = 0; r < n; ++r) {
    for (int32_t a = g.rule_alt_begin[r]; a < g.rule_alt_begin[r + 1]; ++a) {
      for (int32_t i = g.alt_begin[a]; g.elems[i] != kEnd; ++i) {
        if (!Bnf::is_ref(g.elems[i])) break;
        const int32_t s = Bnf::ref_rule(g.elems[i]);
        edges[r].push_back({s, g.elems[i + 1] != kEnd});
        if (!nullable[s]) break;
      }
    }
  }
  std::vector<int32_t> seen(n, -1), work;
  for (int32_t r = 0; r < n; ++r) {
    for (const Edge& e : edges[r]) {
      if (!e.push) continue;
      // Is r reachable from e.to?
      work.assign(1, e.to);
      while (!work.empty()) {
        const int32_t x = work.back();
        work.pop_back();
        if (x == r) return Status::error("rule '", g.rule_names[r], "' is left-recursive");
        if (seen[x] == r) continue;
        seen[x] = r;
        for (const Edge& f : edges[x]) work.push_back(f.to);
      }
    }
  }
  return Status::ok();
}

}  // namespace

Result<Bnf> lower_grammar(const GrammarIr& ir) {
  if (ir.root < 0 || ir.root >= static_cast<int32_t>(ir.bodies.size()) || !ir.defined[ir.root]) {
    return Status::error("grammar has no root rule");
  }
  for (size_t r = 0; r < ir.bodies.size(); ++r) {
    if (!ir.defined[r]) return Status::error("undefined rule '", ir.names[r], "'");
  }
  Lowering low(ir);
  DSS_RETURN_IF_ERROR(low.run());
  Bnf g = low.finish();
  if (static_cast<int64_t>(g.elems.size()) > kMaxElems) {
    return Status::error("grammar too large (", g.elems.size(), " elements, limit ", kMaxElems,
                         ")");
  }
  DSS_RETURN_IF_ERROR(check_left_recursion(g));
  return g;
}

}  // namespace dss::grammar
