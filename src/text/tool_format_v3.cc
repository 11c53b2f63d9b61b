// DeepSeek-V3 tool calls (deepseek-reference.md §4.2): one call body is
// `function<｜tool▁sep｜>NAME\n```json\nARGS\n```` (the type word before the separator is the
// OpenAI type; anything non-empty is accepted; the `json` fence tag is optional).
#include "text/chat_tokens.h"
#include "text/tool_format_util.h"
#include "text/tool_parser.h"

namespace dss {
namespace {

bool parse_v3_call(std::string_view body, std::string& name, std::string& args) {
  std::string_view sep = tok::kToolSep;
  size_t s = body.find(sep);
  if (s == std::string_view::npos || trim_space(body.substr(0, s)).empty()) return false;
  std::string_view rest = body.substr(s + sep.size());
  size_t nl = rest.find('\n');
  if (nl == std::string_view::npos) return false;
  std::string_view n = trim_space(rest.substr(0, nl));
  std::string_view a = trim_space(rest.substr(nl + 1));
  if (a.substr(0, 3) != "```") return false;
  a.remove_prefix(3);
  if (a.substr(0, 4) == "json") a.remove_prefix(4);
  a = trim_space(a);
  if (a.size() < 3 || a.substr(a.size() - 3) != "```") return false;
  a = trim_space(a.substr(0, a.size() - 3));
  if (!valid_tool_name(n) || !is_json_object(a)) return false;
  name = n;
  args = a;
  return true;
}

}  // namespace

const ToolFormat& tool_format_v3() {
  static const ToolFormat f{
      {{tok::kCallsBegin, tok::kCallsEnd}}, tok::kCallBegin, tok::kCallEnd, parse_v3_call};
  return f;
}

}  // namespace dss
