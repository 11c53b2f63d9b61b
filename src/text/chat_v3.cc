// DeepSeek-V3 prompt format: a line-by-line port of the official Jinja chat_template in
// deepseek-ai/DeepSeek-V3 tokenizer_config.json (deepseek-reference.md §4.2). Quirks kept on
// purpose (byte-equality with the template is tested): `is_first` is never reset, so only the
// first tool-call message of a conversation opens `<｜tool▁calls▁begin｜>` and later calls each
// close the block; only the first tool message writes `<｜tool▁outputs▁begin｜>`; an assistant
// message with non-null content renders its content and ignores its tool_calls.
#include "text/chat_template.h"
#include "text/chat_tokens.h"

namespace dss {

Result<std::string> render_chat_v3(const ChatRequest& req) {
  std::string system_prompt;
  bool first_sp = true;
  for (const ChatMessage& m : req.messages) {
    if (m.role != "system") continue;
    if (!first_sp) system_prompt += "\n\n";
    system_prompt += m.content.value_or("");
    first_sp = false;
  }
  std::string out = std::string(tok::kBos) + system_prompt;
  bool is_first = false, is_tool = false, is_output_first = true;
  auto call_text = [](const ChatToolCall& c) {
    return c.type + tok::kToolSep + c.name + "\n```json\n" + c.arguments + "\n```" + tok::kCallEnd;
  };
  for (const ChatMessage& m : req.messages) {
    if (m.role == "user") {
      is_tool = false;
      out += tok::kUser + m.content.value_or("");
    } else if (m.role == "assistant" && !m.content) {
      is_tool = false;
      for (const ChatToolCall& c : m.tool_calls) {
        if (!is_first) {
          out += std::string(tok::kAssistant) + tok::kCallsBegin + tok::kCallBegin + call_text(c);
          is_first = true;
        } else {
          out += std::string("\n") + tok::kCallBegin + call_text(c) + tok::kCallsEnd + tok::kEos;
        }
      }
    } else if (m.role == "assistant") {
      if (is_tool) {
        out += tok::kOutputsEnd + *m.content + tok::kEos;
        is_tool = false;
      } else {
        out += tok::kAssistant + *m.content + tok::kEos;
      }
    } else if (m.role == "tool") {
      is_tool = true;
      if (is_output_first) {
        out += std::string(tok::kOutputsBegin) + tok::kOutputBegin + m.content.value_or("") +
               tok::kOutputEnd;
        is_output_first = false;
      } else {
        out += std::string("\n") + tok::kOutputBegin + m.content.value_or("") + tok::kOutputEnd;
      }
    }
  }
  if (is_tool) out += tok::kOutputsEnd;
  if (req.add_generation_prompt && !is_tool) out += tok::kAssistant;
  return out;
}

}  // namespace dss
