// Server-sent events framing as OpenAI streams use it: each message is one `data: <json>` line
// followed by a blank line; the stream ends with `data: [DONE]`. JSON text never contains a raw
// newline (nlohmann escapes it), so one data line per event is always enough.
#pragma once

#include <string>
#include <string_view>

namespace dss {

inline std::string sse_event(std::string_view json) {
  std::string s;
  s.reserve(json.size() + 8);
  s += "data: ";
  s += json;
  s += "\n\n";
  return s;
}

inline std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace dss
