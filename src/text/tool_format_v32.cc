// DeepSeek-V3.2 DSML tool calls (deepseek-reference.md §4.5). A call body (after
// `<｜DSML｜invoke`) is ` name="NAME">` followed by parameters
// `<｜DSML｜parameter name="K" string="true|false">V</｜DSML｜parameter>` separated by whitespace.
// Arguments are rebuilt like the reference parser: `{"K": V, ...}` with string="true" values
// JSON-quoted and string="false" values inserted verbatim (they must be valid JSON).
#include "text/chat_tokens.h"
#include "text/py_json.h"
#include "text/tool_format_util.h"
#include "text/tool_parser.h"

namespace dss {
namespace {

// Consumes `prefix` + quoted value + `"` from s; returns false if the shape differs.
bool take_attr(std::string_view& s, std::string_view prefix, std::string_view& value) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  size_t q = s.find('"');
  if (q == std::string_view::npos) return false;
  value = s.substr(0, q);
  s.remove_prefix(q + 1);
  return true;
}

bool parse_v32_call(std::string_view body, std::string& name, std::string& args) {
  const std::string d = tok::kDsml;
  const std::string p_begin = "<" + d + "parameter", p_end = "</" + d + "parameter>";
  std::string_view s = body;
  std::string_view n;
  if (s.empty() || (s[0] != ' ' && s[0] != '\n')) return false;
  s = trim_space(s);
  if (!take_attr(s, "name=\"", n) || !valid_tool_name(n)) return false;
  s = trim_space(s);
  if (s.empty() || s[0] != '>') return false;
  s.remove_prefix(1);
  std::string out = "{";
  bool first = true;
  for (s = trim_space(s); !s.empty(); s = trim_space(s)) {
    std::string_view key, is_str;
    if (s.substr(0, p_begin.size()) != p_begin) return false;
    s.remove_prefix(p_begin.size());
    s = trim_space(s);
    if (!take_attr(s, "name=\"", key)) return false;
    s = trim_space(s);
    if (!take_attr(s, "string=\"", is_str) || (is_str != "true" && is_str != "false")) return false;
    s = trim_space(s);
    if (s.empty() || s[0] != '>') return false;
    s.remove_prefix(1);
    size_t e = s.find(p_end);
    if (e == std::string_view::npos) return false;
    std::string_view value = s.substr(0, e);
    s.remove_prefix(e + p_end.size());
    if (!first) out += ", ";
    first = false;
    out += py_json_dumps(OrderedJson(std::string(key)), false) + ": ";
    out += is_str == "true" ? py_json_dumps(OrderedJson(std::string(value)), false)
                            : std::string(trim_space(value));
  }
  out += "}";
  if (!is_json_object(out)) return false;
  name = n;
  args = std::move(out);
  return true;
}

}  // namespace

const ToolFormat& tool_format_v32() {
  const std::string d = tok::kDsml;
  static const ToolFormat f{{{"\n\n<" + d + "function_calls>", "</" + d + "function_calls>"},
                             {"<" + d + "function_calls>", "</" + d + "function_calls>"},
                             {"\n\n<" + d + "tool_calls>", "</" + d + "tool_calls>"},
                             {"<" + d + "tool_calls>", "</" + d + "tool_calls>"}},
                            "<" + d + "invoke",
                            "</" + d + "invoke>",
                            parse_v32_call};
  return f;
}

}  // namespace dss
