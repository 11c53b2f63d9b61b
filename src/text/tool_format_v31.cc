// DeepSeek-V3.1 tool calls (deepseek-reference.md §4.3): one call body is
// `NAME<｜tool▁sep｜>ARGS` with ARGS a JSON object; calls are concatenated without separators.
#include "text/chat_tokens.h"
#include "text/tool_format_util.h"
#include "text/tool_parser.h"

namespace dss {
namespace {

bool parse_v31_call(std::string_view body, std::string& name, std::string& args) {
  std::string_view sep = tok::kToolSep;
  size_t s = body.find(sep);
  if (s == std::string_view::npos) return false;
  std::string_view n = trim_space(body.substr(0, s));
  std::string_view a = trim_space(body.substr(s + sep.size()));
  if (!valid_tool_name(n) || !is_json_object(a)) return false;
  name = n;
  args = a;
  return true;
}

}  // namespace

const ToolFormat& tool_format_v31() {
  static const ToolFormat f{
      {{tok::kCallsBegin, tok::kCallsEnd}}, tok::kCallBegin, tok::kCallEnd, parse_v31_call};
  return f;
}

}  // namespace dss
