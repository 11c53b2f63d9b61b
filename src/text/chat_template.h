// render_chat: ChatRequest -> prompt text for one DeepSeek format.
//
// kV3 and kV31 reproduce the official Jinja templates byte for byte (V3: tokenizer_config.json
// of deepseek-ai/DeepSeek-V3; V3.1: the official V3.1 template), including their quirks, because
// that is what the models were trained on: V3 only renders tool calls of assistant messages whose
// content is null, and only the first tool message of a conversation opens
// `<｜tool▁outputs▁begin｜>`; V3.1 strips everything up to the first `</think>` from history.
// kV32 follows DeepSeek's Python encoder (encoding_dsv32.py, deepseek-reference.md §4.5); the
// request's top-level `tools` are attached to the first system message (one is inserted,
// empty, when there is none).
// The official V3/V3.1 templates never render tool schemas. With inject_tool_prompt (default),
// V3.1 appends the model card's tool description block (§4.3) to the system prompt when the
// request has tools; V3 renders nothing for them (no official text exists).
// The prompt starts with the BOS text: encode it with EncodeOptions{.add_bos = false}.
#pragma once

#include <string>

#include "base/status.h"
#include "text/chat_format.h"
#include "text/chat_request.h"

namespace dss {

struct ChatTemplateOptions {
  bool inject_tool_prompt = true;
};

Result<std::string> render_chat(ChatFormat format, const ChatRequest& req,
                                const ChatTemplateOptions& opts = {});

// Per-format renderers (chat_v3.cc, chat_v31.cc, chat_v32.cc).
Result<std::string> render_chat_v3(const ChatRequest& req);
Result<std::string> render_chat_v31(const ChatRequest& req, bool inject_tool_prompt);
Result<std::string> render_chat_v32(const ChatRequest& req);

// The V3.1 model-card tool block (§4.3) for `tools`, without leading separator.
std::string v31_tool_prompt(const OrderedJson& tools);

}  // namespace dss
