// ChatRequest: the part of an OpenAI-style chat completion request that shapes the prompt.
//
// Accepted JSON (unknown keys are ignored):
//   messages[]: {role: system|user|assistant|tool|developer, content: string|null|[{type:"text",
//                text}], reasoning_content?, tool_calls?: [{id?, type?, function: {name,
//                arguments: string (JSON text) or object}}], tool_call_id?, name?, prefix?}
//   tools?: [{type: "function", function: {name, description?, parameters?}}]
//   thinking? | enable_thinking? | chat_template_kwargs.{thinking|enable_thinking}: bool
//   add_generation_prompt? (also inside chat_template_kwargs): bool, default true
//   response_format?: object (rendered by V3.2 only)
// Errors name the offending field ("messages[2].tool_calls[0].function.name: missing").
// An empty `tool_calls: []` is treated as absent (the official V3.1 template would otherwise
// emit a call block with no calls and drop the message content).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "io/json.h"

namespace dss {

struct ChatToolCall {
  std::string id;
  std::string type = "function";
  std::string name;
  std::string arguments;  // JSON text, emitted verbatim (never re-quoted)
};

struct ChatMessage {
  std::string role;
  std::optional<std::string> content;  // nullopt = JSON null / absent
  std::optional<std::string> reasoning_content;
  std::vector<ChatToolCall> tool_calls;  // empty = none
  std::string tool_call_id;
  std::string name;
  bool prefix = false;  // DeepSeek prefix completion: continue this assistant message
};

struct ChatRequest {
  std::vector<ChatMessage> messages;
  OrderedJson tools = OrderedJson::array();  // as given, key order kept
  std::optional<bool> thinking;              // nullopt = not specified
  bool add_generation_prompt = true;
  OrderedJson response_format;  // null when absent
};

Result<ChatRequest> parse_chat_request(const OrderedJson& j);

}  // namespace dss
