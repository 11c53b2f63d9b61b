// GrammarCompiler: turns grammar sources into CompiledGrammars bound to one vocabulary, and
// caches them by (kind, options, source text), so every request with the same schema, regex or
// grammar shares one compiled grammar and its mask caches.
//
// Source kinds: JSON Schema (json_schema.h), any JSON object (response_format json_object), a
// regular expression (regex_parser.h; the whole output must match, as vLLM's `regex`), GBNF
// (gbnf_parser.h), and a list of choices (exact strings, as vLLM's `choice`).
// Errors are input errors (Result): a 400 naming the field at the API.
// Threading: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/status.h"
#include "grammar/compiled_grammar.h"
#include "grammar/expr.h"
#include "grammar/json_schema.h"
#include "grammar/token_vocab.h"

namespace dss::grammar {

class GrammarCompiler {
 public:
  explicit GrammarCompiler(std::shared_ptr<const TokenVocab> vocab, int32_t max_cached = 256,
                           const CompileOptions& opts = {});

  using Compiled = Result<std::shared_ptr<CompiledGrammar>>;
  Compiled json_schema(std::string_view schema, const JsonSchemaOptions& opts = {});
  Compiled json_object(JsonWhitespace ws = JsonWhitespace::kCompact);
  Compiled regex(std::string_view pattern);
  Compiled gbnf(std::string_view text);
  Compiled choice(std::span<const std::string> choices);
  // Lowers and binds an IR built by the caller (not cached).
  Compiled from_ir(const GrammarIr& ir);
  // The same, cached under `key` (the caller's kind prefix plus everything the IR depends on):
  // `build` runs only on a miss. Used by grammars composed outside this library (forced tool
  // calls).
  Compiled from_ir_cached(std::string key, const std::function<Result<GrammarIr>()>& build);

  const std::shared_ptr<const TokenVocab>& vocab() const { return vocab_; }
  int32_t n_cached();

 private:
  template <typename Build>
  Compiled cached(std::string key, const Build& build);

  std::shared_ptr<const TokenVocab> vocab_;
  int32_t max_cached_;
  CompileOptions opts_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<CompiledGrammar>> cache_;
  std::deque<std::string> order_;  // insertion order, oldest first (evicted first)
};

}  // namespace dss::grammar
