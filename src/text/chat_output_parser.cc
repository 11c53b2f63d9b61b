#include "text/chat_output_parser.h"

namespace dss {

ChatOutputParser::ChatOutputParser(ChatFormat format, const OutputParserOptions& opts) {
  if (opts.parse_reasoning) reasoning_.emplace(opts.starts_in_reasoning);
  if (opts.parse_tools) tools_.emplace(format, opts.tool_id_prefix);
}

void ChatOutputParser::route(std::vector<ParseEvent>&& in, std::vector<ParseEvent>& out) {
  for (ParseEvent& e : in) {
    if (e.kind == ParseEvent::Kind::kContent && tools_) {
      for (ParseEvent& t : tools_->feed(e.text)) out.push_back(std::move(t));
    } else {
      out.push_back(std::move(e));
    }
  }
}

std::vector<ParseEvent> ChatOutputParser::feed(std::string_view delta) {
  std::vector<ParseEvent> out;
  if (reasoning_) {
    route(reasoning_->feed(delta), out);
  } else {
    route({ParseEvent::content(std::string(delta))}, out);
  }
  return out;
}

std::vector<ParseEvent> ChatOutputParser::finish() {
  std::vector<ParseEvent> out;
  if (reasoning_) route(reasoning_->finish(), out);
  if (tools_) {
    for (ParseEvent& t : tools_->finish()) out.push_back(std::move(t));
  }
  return out;
}

ParsedOutput ChatOutputParser::parse_all(ChatFormat format, const OutputParserOptions& opts,
                                         std::string_view text) {
  ChatOutputParser p(format, opts);
  ParsedOutput r;
  r.apply(p.feed(text));
  r.apply(p.finish());
  return r;
}

}  // namespace dss
