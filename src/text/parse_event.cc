#include "text/parse_event.h"

namespace dss {

void ParsedOutput::apply(const ParseEvent& e) {
  switch (e.kind) {
    case ParseEvent::Kind::kContent:
      content += e.text;
      break;
    case ParseEvent::Kind::kReasoning:
      reasoning_content += e.text;
      break;
    case ParseEvent::Kind::kToolCall:
      tool_calls.push_back({e.tool_id, e.tool_name, e.text});
      break;
    case ParseEvent::Kind::kWarning:
      warnings.push_back(e.text);
      break;
  }
}

Json to_openai_delta(const std::vector<ParseEvent>& events) {
  Json d = Json::object();
  std::string content, reasoning;
  Json calls = Json::array();
  for (const ParseEvent& e : events) {
    if (e.kind == ParseEvent::Kind::kContent) content += e.text;
    if (e.kind == ParseEvent::Kind::kReasoning) reasoning += e.text;
    if (e.kind == ParseEvent::Kind::kToolCall) {
      calls.push_back({{"index", e.tool_index},
                       {"id", e.tool_id},
                       {"type", "function"},
                       {"function", {{"name", e.tool_name}, {"arguments", e.text}}}});
    }
  }
  if (!reasoning.empty()) d["reasoning_content"] = reasoning;
  if (!content.empty()) d["content"] = content;
  if (!calls.empty()) d["tool_calls"] = calls;
  return d;
}

}  // namespace dss
