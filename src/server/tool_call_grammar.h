// ToolCallGrammar: the grammar that forces a chat reply to be tool calls, written in the model's
// own tool-call format (deepseek-reference.md §4.2-§4.5), with each call's arguments following
// its tool's `parameters` JSON Schema. Used for `tool_choice: "required"` (one or more calls to
// any of the tools; exactly one with `parallel_tool_calls: false`) and a named tool (exactly one
// call to it).
//
// The reply is nothing but the call block, then EOS:
//   kV3   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```
//         <｜tool▁call▁end｜> ( \n<｜tool▁call▁begin｜>... )* <｜tool▁calls▁end｜>
//   kV31  <｜tool▁calls▁begin｜> ( <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>
//   )+
//         <｜tool▁calls▁end｜>
//   kV32  \n\n<｜DSML｜function_calls>\n INVOKE (\n INVOKE)* \n</｜DSML｜function_calls>, INVOKE =
//         <｜DSML｜invoke name="NAME">\n (PARAM\n)* </｜DSML｜invoke>, PARAM =
//         <｜DSML｜parameter name="K" string="true">RAW</｜DSML｜parameter> for a string value, as
//         the reference encoder writes it (a plain string property: RAW is any characters but
//         '<', within minLength/maxLength; an enum / const: its string members), else
//         string="false" with the value as JSON (a string with a pattern or format is JSON too:
//         the raw form could not be held to it); properties in declared order, required ones
//         always, optional ones optional, no others.
// The V3/V3.1 markers are control tokens (grammar/token_vocab.h): the vocabulary must have them
// (TokenVocab::from_tokenizer with tool_call_control_tokens()), else an error.
// ARGS: the JSON Schema grammar of `parameters` (grammar/json_schema.h, strict: no properties
// beyond those declared); a tool without parameters has an empty parameter list (OpenAI's
// meaning): `{}`, or no DSML parameter.
// Errors (Result, shown as a 400 naming the field): an unsupported schema keyword
// ("tools[1].function.parameters: json schema: ..."), a V3.2 parameters schema that is not an
// object of properties, a named tool that is not in `tools`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "grammar/compiled_grammar.h"
#include "grammar/expr.h"
#include "grammar/grammar_compiler.h"
#include "grammar/token_vocab.h"
#include "io/json.h"
#include "text/chat_format.h"

namespace dss {

// The added tokens the V3 / V3.1 call formats need as control tokens.
const std::vector<std::string>& tool_call_control_tokens();

// The text that opens a call block (V3/V3.1: the <｜tool▁calls▁begin｜> token's text; V3.2:
// `<｜DSML｜function_calls>`): where the grammar of strict tools under tool_choice auto starts.
const char* tool_call_block_marker(ChatFormat fmt);
// Whether any of `tools` has `function.strict: true`.
bool has_strict_tool(const OrderedJson& tools);

struct ForcedToolCalls {
  ChatFormat format = ChatFormat::kV3;
  const OrderedJson* tools = nullptr;  // the request's `tools` array (validated names)
  std::string only_name;               // non-empty: exactly one call to this tool
  bool several = true;                 // with only_name empty: one or more calls, else one
  // Strict tools under tool_choice auto: the grammar of the block after its opening marker (the
  // engine's gate waits for tool_call_block_marker()); only tools with `strict: true` are held to
  // their schema, the others take any arguments (V3.2: any parameters whose values hold no '<').
  bool after_marker = false;
};

Result<grammar::GrammarIr> forced_tool_calls_ir(const ForcedToolCalls& f,
                                                const grammar::TokenVocab& vocab);

// Compiled through `compiler`'s cache (keyed by format, name and the tools' JSON text).
Result<std::shared_ptr<grammar::CompiledGrammar>> compile_forced_tool_calls(
    const ForcedToolCalls& f, grammar::GrammarCompiler& compiler);

}  // namespace dss
