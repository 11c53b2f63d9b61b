// DeepSeek-V3.2 prompt format (DSML tool calls), following DeepSeek's Python encoder
// encoding_dsv32.py as summarised in deepseek-reference.md §4.5. Thinking mode = req.thinking
// (default false = "chat" mode). The encoder always ends a user turn with
// `<｜Assistant｜>` + `<think>`|`</think>`, so add_generation_prompt has no effect here.
#include "text/chat_template.h"
#include "text/chat_tokens.h"
#include "text/py_json.h"

namespace dss {
namespace {

std::string tools_block(const OrderedJson& tools) {
  const std::string d = tok::kDsml;
  std::string s =
      "## Tools\n\nYou have access to a set of tools you can use to answer the user's question.\n"
      "You can invoke functions by writing a \"<" +
      d +
      "function_calls>\" block like the "
      "following as part of your reply to the user:\n"
      "<" +
      d +
      "function_calls>\n"
      "<" +
      d +
      "invoke name=\"$FUNCTION_NAME\">\n"
      "<" +
      d + "parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</" + d +
      "parameter>\n...\n</" + d +
      "invoke>\n"
      "<" +
      d + "invoke name=\"$FUNCTION_NAME2\">\n...\n</" + d +
      "invoke>\n"
      "</" +
      d +
      "function_calls>\n\n"
      "String and scalar parameters should be specified as is without any escaping or quotes, "
      "while lists and objects should use JSON format. The \"string\" attribute should be set to "
      "\"true\" for string type parameters and \"false\" for other types (numbers, booleans, "
      "arrays, objects).\n\n"
      "If the thinking_mode is enabled, then after function results you should strongly "
      "consider outputting a thinking block. Here is an example:\n\n"
      "<" +
      d + "function_calls>\n...\n</" + d +
      "function_calls>\n\n"
      "<function_results>\n...\n</function_results>\n\n" +
      tok::kThinkBegin + "...thinking about results" + tok::kThinkEnd +
      "\n\n"
      "Here are the functions available in JSONSchema format:\n<functions>\n";
  for (size_t i = 0; i < tools.size(); ++i) {
    if (i > 0) s += "\n";
    s += py_json_dumps(tools[i]["function"], /*ensure_ascii=*/false);
  }
  s += "\n</functions>\n";
  return s;
}

std::string response_format_block(const OrderedJson& rf) {
  return "## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n" +
         py_json_dumps(rf, false);
}

Result<std::string> invoke_text(const ChatToolCall& c) {
  const std::string d = tok::kDsml;
  Result<OrderedJson> parsed =
      parse_json_bounded(c.arguments, "tool call '" + c.name + "': arguments");
  if (!parsed && parsed.message().find(": nested deeper") != std::string::npos)
    return parsed.status();
  const OrderedJson args = parsed ? std::move(parsed).value() : OrderedJson();
  if (!args.is_object()) {
    return Status::error("tool call '", c.name, "': arguments must be a JSON object for V3.2");
  }
  std::string s = "<" + d + "invoke name=\"" + c.name + "\">\n";
  bool first = true;
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (!first) s += "\n";
    first = false;
    bool is_str = it.value().is_string();
    s += "<" + d + "parameter name=\"" + it.key() + "\" string=\"" + (is_str ? "true" : "false") +
         "\">" + (is_str ? it.value().get<std::string>() : py_json_dumps(it.value(), false)) +
         "</" + d + "parameter>";
  }
  s += "\n</" + d + "invoke>";
  return s;
}

// One tool message: results of the preceding assistant's calls, in order, in one
// <function_results> block closed after the last one (§4.5 "tool").
Status append_tool_result(const std::vector<const ChatMessage*>& msgs, size_t i, bool think_next,
                          std::string& out) {
  size_t prev = i;
  while (prev > 0 && msgs[prev - 1]->role == "tool") --prev;
  if (prev == 0 || msgs[prev - 1]->role != "assistant") {
    return Status::error("messages: tool message without a preceding assistant tool call");
  }
  const ChatMessage& asst = *msgs[prev - 1];
  size_t order = i - prev + 1;  // 1-based position among the assistant's calls
  if (asst.tool_calls.size() < order) {
    return Status::error("messages: more tool results than the assistant's tool calls");
  }
  if (order == 1) out += "\n\n<function_results>";
  out += "\n<result>" + msgs[i]->content.value_or("") + "</result>";
  if (order == asst.tool_calls.size()) {
    out += "\n</function_results>";
    out += think_next ? "\n\n<think>" : "\n\n</think>";
  }
  return Status::ok();
}

}  // namespace

Result<std::string> render_chat_v32(const ChatRequest& req) {
  const bool thinking = req.thinking.value_or(false);
  std::vector<const ChatMessage*> msgs;
  ChatMessage synthetic_system{.role = "system", .content = std::string()};
  size_t tools_at = SIZE_MAX;  // index (in msgs) of the system message that carries the tools
  for (const ChatMessage& m : req.messages) msgs.push_back(&m);
  if (!req.tools.empty() || !req.response_format.is_null()) {
    for (size_t i = 0; i < msgs.size() && tools_at == SIZE_MAX; ++i) {
      if (msgs[i]->role == "system") tools_at = i;
    }
    if (tools_at == SIZE_MAX) {
      msgs.insert(msgs.begin(), &synthetic_system);
      tools_at = 0;
    }
  }
  long last_user = -1;
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (msgs[i]->role == "user" || msgs[i]->role == "developer") last_user = static_cast<long>(i);
  }
  std::string out = tok::kBos;
  const std::string d = tok::kDsml;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const ChatMessage& m = *msgs[i];
    const long idx = static_cast<long>(i);
    const std::string content = m.content.value_or("");
    const char* think_switch = (idx == last_user && thinking) ? tok::kThinkBegin : tok::kThinkEnd;
    if (m.role == "system") {
      out += content;
      if (i == tools_at && !req.tools.empty()) out += "\n\n" + tools_block(req.tools);
      if (i == tools_at && !req.response_format.is_null()) {
        out += "\n\n" + response_format_block(req.response_format);
      }
    } else if (m.role == "developer") {
      std::string dev;
      if (!req.tools.empty()) dev += "\n\n" + tools_block(req.tools);
      if (!req.response_format.is_null())
        dev += "\n\n" + response_format_block(req.response_format);
      dev += "\n\n# The user's message is: " + content;
      out += tok::kUser + dev + tok::kAssistant + think_switch;
    } else if (m.role == "user") {
      out += tok::kUser + content + tok::kAssistant + think_switch;
    } else if (m.role == "tool") {
      DSS_RETURN_IF_ERROR(append_tool_result(msgs, i, idx >= last_user && thinking, out));
    } else if (m.role == "assistant") {
      std::string calls;
      if (!m.tool_calls.empty()) {
        calls = "\n\n<" + d + "function_calls>\n";
        for (size_t k = 0; k < m.tool_calls.size(); ++k) {
          DSS_ASSIGN_OR_RETURN(std::string inv, invoke_text(m.tool_calls[k]));
          if (k > 0) calls += "\n";
          calls += inv;
        }
        calls += "\n</" + d + "function_calls>";
      }
      std::string reasoning;
      if (thinking && idx > last_user)
        reasoning = m.reasoning_content.value_or("") + tok::kThinkEnd;
      out += reasoning + content + calls + tok::kEos;
    }
  }
  return out;
}

}  // namespace dss
