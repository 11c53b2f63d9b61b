// ChatOutputParser: the one streaming parser the server uses per request. Reasoning first
// (ReasoningParser), then tool calls inside the content (ToolParser for the request's format).
// feed(text delta) -> events; finish() -> the remaining events. Same contracts as the two parts:
// nothing dropped, malformed tool output becomes content + a kWarning event, and any chunking of
// the same text folds to the same ParsedOutput.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/chat_format.h"
#include "text/parse_event.h"
#include "text/reasoning_parser.h"
#include "text/tool_parser.h"

namespace dss {

struct OutputParserOptions {
  bool starts_in_reasoning = false;  // prompt ended with `<think>` (see prompt_opens_reasoning)
  bool parse_reasoning = true;
  bool parse_tools = true;  // false when the request has no tools: everything stays content
  std::string tool_id_prefix = "call_";
};

class ChatOutputParser {
 public:
  ChatOutputParser(ChatFormat format, const OutputParserOptions& opts);

  std::vector<ParseEvent> feed(std::string_view delta);
  std::vector<ParseEvent> finish();

  bool has_tool_calls() const { return tools_ && tools_->n_tool_calls() > 0; }
  bool had_warning() const { return tools_ && tools_->had_warning(); }

  // Non-streamed convenience: feed(text) + finish(), folded.
  static ParsedOutput parse_all(ChatFormat format, const OutputParserOptions& opts,
                                std::string_view text);

 private:
  void route(std::vector<ParseEvent>&& in, std::vector<ParseEvent>& out);

  std::optional<ReasoningParser> reasoning_;
  std::optional<ToolParser> tools_;
};

}  // namespace dss
