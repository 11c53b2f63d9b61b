// OutputConstraint: the structured-output part of a request (which grammar the output must
// follow), read from the request body and compiled through the grammar library's cache.
//
// Accepted (both endpoints; at most one per request, else a 400 naming the fields):
//   response_format: {type: "text"} (no constraint), {type: "json_object"} (any JSON object),
//     {type: "json_schema", json_schema: {name?, schema, strict?, description?}} (OpenAI);
//   structured_outputs: {json: schema (object or JSON text) | regex: string | choice: [string] |
//     grammar: GBNF string | json_object: true} (vLLM; exactly one of them);
//   regex: string, ebnf: GBNF string (SGLang's top-level fields).
// The JSON Schema, regex and GBNF dialects are the grammar library's (docs/grammar.md); the
// whole output must match (vLLM's semantics for regex). `strict` is accepted and changes nothing:
// a given schema is always enforced.
// Errors: a Status whose message starts with the field ("response_format.json_schema.schema: json
// schema: #/properties/a: unsupported keyword 'minProperties'"), shown as a 400 naming the field.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_compiler.h"
#include "io/json.h"

namespace dss {

struct OutputConstraint {
  enum class Kind { kNone, kJsonObject, kJsonSchema, kRegex, kChoice, kGrammar };
  Kind kind = Kind::kNone;
  std::string field;                 // the request field that holds it (errors name it)
  std::string source;                // schema JSON text, regex or GBNF text
  std::vector<std::string> choices;  // kChoice
};

// The request body's constraint (kNone when it has none). Types and shapes only: the source is
// checked when compiled.
Result<OutputConstraint> parse_output_constraint(const OrderedJson& body);

// The compiled grammar of `c` (null for kNone), from `compiler`'s cache: a repeated schema,
// regex or grammar compiles once. Errors name c.field and the grammar library's reason.
Result<std::shared_ptr<grammar::CompiledGrammar>> compile_output_constraint(
    const OutputConstraint& c, grammar::GrammarCompiler& compiler);

}  // namespace dss
