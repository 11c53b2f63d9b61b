// The request path before the engine: an OpenAI request body becomes validated prompts (token ids)
// or the ApiError to answer. Pure: no engine, no sockets, no clock; the routes call it on the io
// thread and the request-path fuzzer (tests/fuzz/fuzz_request.cc) calls it directly.
//
// Steps, each a possible 400 naming the field: bounded JSON parse (io/json.h: depth
// kMaxJsonDepth, linear in width) -> schemas (types and ranges) -> model name (404) -> chat
// rendering or prompt tokens -> context length (the prompt alone: `messages` / `prompt`; with
// max_tokens: the key the client used) -> sampling parameters against the vocabulary -> the
// output constraint or the forced tool calls compiled (grammar library's cache; errors name the
// field and the keyword).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"
#include "grammar/grammar_compiler.h"
#include "server/api_error.h"
#include "server/schemas.h"
#include "text/chat_format.h"
#include "text/tokenizer.h"

namespace dss {

struct PromptContext {
  const Tokenizer* tok = nullptr;  // null: --skip-tokenizer-init (token-id prompts only)
  ChatFormat chat_format = ChatFormat::kV3;
  int32_t context_length = 0;  // tokens: prompt + max_tokens must fit
  int32_t n_vocab = 0;
  std::string served_model_name;
  // Compiles structured-output constraints; null: none can be served (no tokenizer, or one that
  // does not match the model's vocabulary), a request with one gets a 400.
  grammar::GrammarCompiler* grammars = nullptr;
  // The tool-call format replies are parsed in (nullopt: none); tool_choice "required" or a
  // named tool forces a call in it (server/tool_call_grammar.h).
  std::optional<ChatFormat> tool_format;
};

struct PreparedRequest {
  CompletionRequest req;
  std::vector<std::vector<TokenId>> prompts;  // [n_prompts][n_tokens], each non-empty
  bool starts_in_reasoning = false;           // the rendered chat prompt opens <think>
  // req.constraint, or the forced tool calls, compiled; null: none
  std::shared_ptr<grammar::CompiledGrammar> grammar;
  // The grammar is strict tools' under tool_choice auto: it starts after the tool-call block's
  // opening marker (tool_call_block_marker(*tool_format)); the text before it is free.
  bool grammar_after_tool_marker = false;
};

// The prepared request, or the error to answer (status 400 or 404).
std::optional<ApiError> prepare_request(Endpoint endpoint, std::string_view body,
                                        const PromptContext& ctx, PreparedRequest& out);

}  // namespace dss
