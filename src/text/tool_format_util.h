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
inline bool is_json_object(std::string_view s) {
  Json j = Json::parse(s, nullptr, /*allow_exceptions=*/false);
  return !j.is_discarded() && j.is_object();
}

}  // namespace dss
