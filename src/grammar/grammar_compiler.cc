#include "grammar/grammar_compiler.h"

#include <utility>

#include "grammar/bnf.h"
#include "grammar/gbnf_parser.h"
#include "grammar/regex_parser.h"
#include "grammar/utf8_ranges.h"

namespace dss::grammar {

GrammarCompiler::GrammarCompiler(std::shared_ptr<const TokenVocab> vocab, int32_t max_cached,
                                 const CompileOptions& opts)
    : vocab_(std::move(vocab)), max_cached_(max_cached), opts_(opts) {}

template <typename Build>
GrammarCompiler::Compiled GrammarCompiler::cached(std::string key, const Build& build) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  // Built outside the lock: two threads may build the same grammar once each; the first wins.
  Result<GrammarIr> ir = build();
  if (!ir) return ir.status();
  Compiled g = from_ir(*ir);
  if (!g) return g;
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, added] = cache_.emplace(key, *g);
  if (added) {
    order_.push_back(std::move(key));
    while (static_cast<int32_t>(order_.size()) > max_cached_) {
      cache_.erase(order_.front());
      order_.pop_front();
    }
  }
  return it->second;
}

GrammarCompiler::Compiled GrammarCompiler::from_ir(const GrammarIr& ir) {
  Result<Bnf> bnf = lower_grammar(ir);
  if (!bnf) return bnf.status();
  return std::make_shared<CompiledGrammar>(std::move(bnf).value(), vocab_, opts_);
}

GrammarCompiler::Compiled GrammarCompiler::from_ir_cached(
    std::string key, const std::function<Result<GrammarIr>()>& build) {
  return cached("ir:" + key, build);
}

GrammarCompiler::Compiled GrammarCompiler::json_schema(std::string_view schema,
                                                       const JsonSchemaOptions& opts) {
  std::string key = "json_schema:" + std::to_string(static_cast<int>(opts.whitespace)) + ":";
  key += schema;
  return cached(std::move(key), [&] { return json_schema_to_ir(schema, opts); });
}

GrammarCompiler::Compiled GrammarCompiler::json_object(JsonWhitespace ws) {
  return cached("json_object:" + std::to_string(static_cast<int>(ws)),
                [&]() -> Result<GrammarIr> { return json_object_ir(ws); });
}

GrammarCompiler::Compiled GrammarCompiler::regex(std::string_view pattern) {
  std::string key = "regex:";
  key += pattern;
  return cached(std::move(key), [&]() -> Result<GrammarIr> {
    Result<ParsedRegex> p = parse_regex(pattern, &utf8_expr);
    if (!p) return p.status();
    GrammarIr ir;
    ir.root = ir.rule_id("root");
    ir.define(ir.root, std::move(p->expr));
    return ir;
  });
}

GrammarCompiler::Compiled GrammarCompiler::gbnf(std::string_view text) {
  std::string key = "gbnf:";
  key += text;
  return cached(std::move(key), [&] { return parse_gbnf(text); });
}

GrammarCompiler::Compiled GrammarCompiler::choice(std::span<const std::string> choices) {
  std::string key = "choice:";
  for (const std::string& c : choices) key += std::to_string(c.size()) + ":" + c;
  return cached(std::move(key), [&]() -> Result<GrammarIr> {
    if (choices.empty()) return Status::error("choice: the list is empty");
    GrammarIr ir;
    ir.root = ir.rule_id("root");
    ir.define(ir.root, Expr::literals(std::vector<std::string>(choices.begin(), choices.end())));
    return ir;
  });
}

int32_t GrammarCompiler::n_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int32_t>(cache_.size());
}

}  // namespace dss::grammar
