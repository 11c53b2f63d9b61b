#include "server/request_prep.h"

#include <algorithm>

#include "base/str_cat.h"
#include "core/validate_sampling_params.h"
#include "io/json.h"
#include "server/tool_call_grammar.h"
#include "text/chat_template.h"
#include "text/reasoning_parser.h"

namespace dss {

namespace {

std::optional<ApiError> encode_prompts(const PromptContext& ctx, PreparedRequest& p) {
  CompletionRequest& r = p.req;
  const Tokenizer* tok = ctx.tok;
  if (r.endpoint == Endpoint::kChat) {
    if (!tok)
      return ApiError::bad_request(
          "messages: chat needs a tokenizer (server runs with --skip-tokenizer-init); use "
          "/v1/completions with token ids",
          "messages");
    auto prompt = render_chat(ctx.chat_format, r.chat);
    if (!prompt) return ApiError::from_status(prompt.status());
    p.starts_in_reasoning = prompt_opens_reasoning(*prompt);
    p.prompts.push_back(tok->encode(*prompt, EncodeOptions{false, true}));
  } else if (!r.prompt_texts.empty()) {
    if (!tok)
      return ApiError::bad_request(
          "prompt: text prompts need a tokenizer (server runs with --skip-tokenizer-init); "
          "give token ids",
          "prompt");
    for (const std::string& t : r.prompt_texts)
      p.prompts.push_back(tok->encode(t, EncodeOptions{tok->add_bos_default(), true}));
  } else {
    p.prompts = std::move(r.prompt_ids);
  }
  if (!tok && !r.params.stop.empty())
    return ApiError::bad_request("stop: stop strings need a tokenizer", "stop");
  return std::nullopt;
}

// Prompt lengths against the context; sets the chat default max_tokens (the rest of it).
std::optional<ApiError> fit_context(const PromptContext& ctx, PreparedRequest& p) {
  CompletionRequest& r = p.req;
  size_t longest = 0;
  for (const auto& t : p.prompts) {
    if (t.empty())
      return ApiError::bad_request("prompt: must contain at least one token", "prompt");
    for (const TokenId id : t)
      if (id >= ctx.n_vocab)
        return ApiError::bad_request(
            str_cat("prompt: token id ", id, " is out of range [0, ", ctx.n_vocab, ")"), "prompt");
    longest = std::max(longest, t.size());
  }
  const int64_t context = ctx.context_length;
  const auto n_prompt = static_cast<int64_t>(longest);
  const char* prompt_field = r.endpoint == Endpoint::kChat ? "messages" : "prompt";
  if (n_prompt >= context)
    return ApiError::bad_request(
        str_cat(prompt_field, ": this model's maximum context length is ", context,
                " tokens; the prompt has ", n_prompt, " tokens (reduce its length)"),
        prompt_field);
  if (!r.max_tokens_given && r.endpoint == Endpoint::kChat)
    r.params.max_tokens = static_cast<int32_t>(context - n_prompt);
  if (n_prompt + r.params.max_tokens > context) {
    const std::string& field = r.max_tokens_field;
    return ApiError::bad_request(
        str_cat(field, ": this model's maximum context length is ", context,
                " tokens; the prompt has ", n_prompt, " tokens and ", field, " asks for ",
                r.params.max_tokens, " more (reduce the prompt or ", field, ")"),
        field);
  }
  return std::nullopt;
}

// Compiles the tool-call grammar `f` into p.grammar, or the 400 naming the field its error names.
std::optional<ApiError> compile_tool_calls(const PromptContext& ctx, const ForcedToolCalls& f,
                                           PreparedRequest& p) {
  auto g = compile_forced_tool_calls(f, *ctx.grammars);
  if (!g) {
    const std::string& m = g.status().message();
    return ApiError::bad_request(m, m.substr(0, m.find(':')));
  }
  p.grammar = std::move(g).value();
  return std::nullopt;
}

// Strict tools (function.strict: true) under tool_choice auto: their calls' grammar, from the
// block's opening marker on. Without a tool-call parser or a grammar compiler nothing is parsed
// or constrained (as for non-strict tools); with a response_format the reply is that format.
std::optional<ApiError> strict_tool_calls(const PromptContext& ctx, PreparedRequest& p) {
  const CompletionRequest& r = p.req;
  if (!ctx.tool_format || ctx.grammars == nullptr || p.grammar || !has_strict_tool(r.chat.tools))
    return std::nullopt;
  ForcedToolCalls f{*ctx.tool_format, &r.chat.tools, "", r.parallel_tool_calls};
  f.after_marker = true;
  if (auto e = compile_tool_calls(ctx, f, p)) return e;
  p.grammar_after_tool_marker = true;
  return std::nullopt;
}

// tool_choice "required" or a named tool: the grammar of the model's own call format.
std::optional<ApiError> force_tool_calls(const PromptContext& ctx, PreparedRequest& p) {
  const CompletionRequest& r = p.req;
  if (!ctx.tool_format)
    return ApiError::bad_request(
        str_cat("tool_choice: '", r.tool_choice == "named" ? r.tool_choice_name : r.tool_choice,
                "' needs tool-call parsing, which this server has off (--tool-call-parser)"),
        "tool_choice");
  if (r.constraint.kind != OutputConstraint::Kind::kNone)
    return ApiError::bad_request(str_cat("tool_choice: a forced tool call cannot be combined with ",
                                         r.constraint.field, " (the reply is the call)"),
                                 "tool_choice");
  if (ctx.grammars == nullptr)
    return ApiError::bad_request(
        "tool_choice: forced tool calls are unavailable: the server has no tokenizer or one whose "
        "ids or EOS differ from the model's",
        "tool_choice");
  const ForcedToolCalls f{*ctx.tool_format, &r.chat.tools,
                          r.tool_choice == "named" ? r.tool_choice_name : std::string(),
                          r.parallel_tool_calls};
  return compile_tool_calls(ctx, f, p);
}

}  // namespace

std::optional<ApiError> prepare_request(Endpoint endpoint, std::string_view body,
                                        const PromptContext& ctx, PreparedRequest& out) {
  Result<OrderedJson> json = parse_json_bounded(body, "");
  if (!json) return ApiError::from_status(json.status());
  Result<CompletionRequest> parsed = parse_completion_request(endpoint, *json);
  if (!parsed) return ApiError::from_status(parsed.status());
  out.req = std::move(parsed).value();
  const CompletionRequest& r = out.req;
  if (!r.model.empty() && r.model != ctx.served_model_name)
    return ApiError{404, "The model `" + r.model + "` does not exist.", "model", "not_found_error"};
  if (auto e = encode_prompts(ctx, out)) return e;
  if (auto e = fit_context(ctx, out)) return e;
  if (Status s = validate_sampling_params(r.params, ctx.n_vocab); !s)
    return ApiError::from_status(s);
  if (r.constraint.kind != OutputConstraint::Kind::kNone) {
    if (ctx.grammars == nullptr)
      return ApiError::bad_request(
          str_cat(r.constraint.field,
                  ": structured output is unavailable: the server has no tokenizer "
                  "(--skip-tokenizer-init) or one whose ids or EOS differ from the model's"),
          r.constraint.field);
    auto g = compile_output_constraint(r.constraint, *ctx.grammars);
    if (!g) return ApiError::bad_request(g.status().message(), r.constraint.field);
    out.grammar = std::move(g).value();
  }
  if (endpoint == Endpoint::kChat && (r.tool_choice == "required" || r.tool_choice == "named"))
    return force_tool_calls(ctx, out);
  if (endpoint == Endpoint::kChat && r.tool_choice == "auto") return strict_tool_calls(ctx, out);
  return std::nullopt;
}

}  // namespace dss
