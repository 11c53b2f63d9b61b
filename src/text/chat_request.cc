#include "text/chat_request.h"

namespace dss {
namespace {

Result<std::optional<std::string>> parse_content(const OrderedJson& m, const std::string& where) {
  if (!m.contains("content") || m["content"].is_null()) return std::optional<std::string>();
  const OrderedJson& c = m["content"];
  if (c.is_string()) return std::optional<std::string>(c.get<std::string>());
  if (c.is_array()) {
    std::string text;
    for (size_t i = 0; i < c.size(); ++i) {
      const OrderedJson& part = c[i];
      // No value(): it throws when the key holds another type ({"type": 5}).
      if (!part.is_object() || !part.contains("type") || part["type"] != "text" ||
          !part.contains("text") || !part["text"].is_string()) {
        return Status::error(where, ".content[", i,
                             "]: only {type: \"text\", text} parts are supported");
      }
      text += part["text"].get<std::string>();
    }
    return std::optional<std::string>(text);
  }
  return Status::error(where, ".content: must be a string, null or an array of text parts");
}

Result<ChatToolCall> parse_tool_call(const OrderedJson& t, const std::string& where) {
  if (!t.is_object()) return Status::error(where, ": must be an object");
  ChatToolCall call;
  if (t.contains("id") && t["id"].is_string()) call.id = t["id"].get<std::string>();
  if (t.contains("type") && t["type"].is_string()) call.type = t["type"].get<std::string>();
  if (!t.contains("function") || !t["function"].is_object()) {
    return Status::error(where, ".function: missing");
  }
  const OrderedJson& f = t["function"];
  if (!f.contains("name") || !f["name"].is_string()) {
    return Status::error(where, ".function.name: missing");
  }
  call.name = f["name"].get<std::string>();
  if (!f.contains("arguments") || f["arguments"].is_null()) {
    call.arguments = "{}";
  } else if (f["arguments"].is_string()) {
    call.arguments = f["arguments"].get<std::string>();
  } else if (f["arguments"].is_object()) {
    call.arguments = f["arguments"].dump();
  } else {
    return Status::error(where, ".function.arguments: must be a JSON string or an object");
  }
  return call;
}

std::optional<bool> bool_key(const OrderedJson& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_boolean()) return j[key].get<bool>();
  return std::nullopt;
}

}  // namespace

Result<ChatRequest> parse_chat_request(const OrderedJson& j) {
  if (!j.is_object()) return Status::error("request: must be a JSON object");
  if (!j.contains("messages") || !j["messages"].is_array()) {
    return Status::error("messages: missing or not an array");
  }
  ChatRequest req;
  const OrderedJson& msgs = j["messages"];
  for (size_t i = 0; i < msgs.size(); ++i) {
    std::string where = "messages[" + std::to_string(i) + "]";
    const OrderedJson& m = msgs[i];
    if (!m.is_object()) return Status::error(where, ": must be an object");
    ChatMessage msg;
    if (!m.contains("role") || !m["role"].is_string())
      return Status::error(where, ".role: missing");
    msg.role = m["role"].get<std::string>();
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" &&
        msg.role != "tool" && msg.role != "developer") {
      return Status::error(where, ".role: unknown role '", msg.role, "'");
    }
    DSS_ASSIGN_OR_RETURN(msg.content, parse_content(m, where));
    if (m.contains("reasoning_content") && m["reasoning_content"].is_string()) {
      msg.reasoning_content = m["reasoning_content"].get<std::string>();
    }
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      if (!m["tool_calls"].is_array()) return Status::error(where, ".tool_calls: must be an array");
      for (size_t k = 0; k < m["tool_calls"].size(); ++k) {
        DSS_ASSIGN_OR_RETURN(
            ChatToolCall call,
            parse_tool_call(m["tool_calls"][k], where + ".tool_calls[" + std::to_string(k) + "]"));
        msg.tool_calls.push_back(std::move(call));
      }
    }
    if (m.contains("tool_call_id") && m["tool_call_id"].is_string()) {
      msg.tool_call_id = m["tool_call_id"].get<std::string>();
    }
    if (m.contains("name") && m["name"].is_string()) msg.name = m["name"].get<std::string>();
    msg.prefix = bool_key(m, "prefix").value_or(false);
    req.messages.push_back(std::move(msg));
  }
  if (j.contains("tools") && !j["tools"].is_null()) {
    if (!j["tools"].is_array()) return Status::error("tools: must be an array");
    for (size_t i = 0; i < j["tools"].size(); ++i) {
      const OrderedJson& t = j["tools"][i];
      if (!t.is_object() || !t.contains("function") || !t["function"].is_object() ||
          !t["function"].contains("name") || !t["function"]["name"].is_string()) {
        return Status::error("tools[", i, "].function.name: missing");
      }
    }
    req.tools = j["tools"];
  }
  const OrderedJson kw =
      j.contains("chat_template_kwargs") ? j["chat_template_kwargs"] : OrderedJson();
  for (const OrderedJson* src : {&j, &kw}) {
    if (auto v = bool_key(*src, "thinking")) req.thinking = v;
    if (auto v = bool_key(*src, "enable_thinking")) req.thinking = v;
    if (auto v = bool_key(*src, "add_generation_prompt")) req.add_generation_prompt = *v;
  }
  if (j.contains("response_format") && j["response_format"].is_object()) {
    req.response_format = j["response_format"];
  }
  return req;
}

}  // namespace dss
