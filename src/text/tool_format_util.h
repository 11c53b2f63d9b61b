// Small string helpers shared by the tool-call format parsers (tool_format_v*.cc).
#pragma once

#include <string>
#include <string_view>

#include "io/json.h"

namespace dss {

inline std::string_view trim_space(std::string_view s) {
  auto sp = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!s.empty() && sp(s.front())) s.remove_prefix(1);
  while (!s.empty() && sp(s.back())) s.remove_suffix(1);
  return s;
}

// A tool name: non-empty, no whitespace, no markup.
inline bool valid_tool_name(std::string_view s) {
  if (s.empty() || s.size() > 256) return false;
  for (char c : s) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '<' || c == '>' || c == '"') {
      return false;
    }
  }
  return true;
}

// True if `s` is one complete JSON object (OpenAI `function.arguments` must be one).
// Deeper than kMaxJsonDepth counts as not an object (nothing downstream could walk it).
inline bool is_json_object(std::string_view s) {
  Result<OrderedJson> j = parse_json_bounded(s, "arguments");
  return j && j->is_object();
}

}  // namespace dss
