// DeepSeek-V3.1 prompt format: a port of the official V3.1 Jinja template (copy with provenance
// in tests/data/text/templates/; deepseek-reference.md §4.3). `thinking` defaults to false.
// History assistant turns lose everything up to the first `</think>` of their content; tool
// results are concatenated `<｜tool▁output▁begin｜>…<｜tool▁output▁end｜>` with no wrapper and no
// generation prompt after them.
#include "text/chat_template.h"
#include "text/chat_tokens.h"
#include "text/py_json.h"

namespace dss {

std::string v31_tool_prompt(const OrderedJson& tools) {
  std::string s = "## Tools\nYou have access to the following tools:";
  for (const OrderedJson& t : tools) {
    const OrderedJson& f = t["function"];
    // name is a checked string (parse_chat_request); a description of another type is ignored
    // (value() would throw on it).
    const bool has_desc = f.contains("description") && f["description"].is_string();
    s += "\n\n### " + f["name"].get<std::string>() +
         "\nDescription: " + (has_desc ? f["description"].get<std::string>() : std::string()) +
         "\n\nParameters: " +
         py_json_dumps(f.contains("parameters") ? f["parameters"] : OrderedJson::object(),
                       /*ensure_ascii=*/true);
  }
  s += std::string("\n\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\n") +
       tok::kCallsBegin + tok::kCallBegin + "tool_call_name" + tok::kToolSep +
       "tool_call_arguments" + tok::kCallEnd + "{{additional_tool_calls}}" + tok::kCallsEnd +
       "\n\nWhere:\n- `tool_call_name` must be an exact match to one of the available tools\n"
       "- `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters "
       "Schema\n- For multiple tool calls, chain them directly without separators or spaces";
  return s;
}

Result<std::string> render_chat_v31(const ChatRequest& req, bool inject_tool_prompt) {
  const bool thinking = req.thinking.value_or(false);
  std::string system_prompt;
  bool first_sp = true;
  for (const ChatMessage& m : req.messages) {
    if (m.role != "system") continue;
    if (!first_sp) system_prompt += "\n\n";
    system_prompt += m.content.value_or("");
    first_sp = false;
  }
  if (inject_tool_prompt && !req.tools.empty()) {
    if (!system_prompt.empty()) system_prompt += "\n\n";
    system_prompt += v31_tool_prompt(req.tools);
  }
  std::string out = std::string(tok::kBos) + system_prompt;
  bool is_tool = false, is_last_user = false;
  for (const ChatMessage& m : req.messages) {
    if (m.role == "user") {
      is_tool = false;
      is_last_user = true;
      out += tok::kUser + m.content.value_or("");
    } else if (m.role == "assistant" && !m.tool_calls.empty()) {
      if (is_last_user) out += std::string(tok::kAssistant) + tok::kThinkEnd;
      is_last_user = false;
      is_tool = false;
      for (size_t i = 0; i < m.tool_calls.size(); ++i) {
        const ChatToolCall& c = m.tool_calls[i];
        if (i == 0) out += m.content.value_or("") + tok::kCallsBegin;
        out += tok::kCallBegin + c.name + tok::kToolSep + c.arguments + tok::kCallEnd;
      }
      out += std::string(tok::kCallsEnd) + tok::kEos;
    } else if (m.role == "assistant") {
      if (is_last_user) {
        out += tok::kAssistant;
        out += (m.prefix && thinking) ? tok::kThinkBegin : tok::kThinkEnd;
      }
      is_last_user = false;
      std::string content = m.content.value_or("");
      if (is_tool) {
        out += content + tok::kEos;
        is_tool = false;
      } else {
        size_t at = content.find(tok::kThinkEnd);
        if (at != std::string::npos)
          content = content.substr(at + std::string(tok::kThinkEnd).size());
        out += content + tok::kEos;
      }
    } else if (m.role == "tool") {
      is_last_user = false;
      is_tool = true;
      out += tok::kOutputBegin + m.content.value_or("") + tok::kOutputEnd;
    }
  }
  if (req.add_generation_prompt && is_last_user && !is_tool) {
    out += tok::kAssistant;
    out += thinking ? tok::kThinkBegin : tok::kThinkEnd;
  }
  return out;
}

}  // namespace dss
