// Fuzz target: ChatOutputParser (reasoning + tool calls) for every ChatFormat.
// Input: byte 0 picks the format and options, bytes 1-2 pick chunk boundaries, the rest is the
// model text. Properties: no crash; chunked parsing folds to the same result as one feed; and
// when no tool call was recognised, nothing was dropped: reasoning + content equals the text
// minus the `<think>`/`</think>` markers the reasoning parser consumed.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "text/chat_output_parser.h"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_output_parser: property violated: %s\n", what);
    std::abort();
  }
}

dss::ParsedOutput parse(dss::ChatFormat f, const dss::OutputParserOptions& o, std::string_view t,
                        size_t a, size_t b) {
  dss::ChatOutputParser p(f, o);
  dss::ParsedOutput r;
  r.apply(p.feed(t.substr(0, a)));
  r.apply(p.feed(t.substr(a, b - a)));
  r.apply(p.feed(t.substr(b)));
  r.apply(p.finish());
  return r;
}

// What reasoning + content must be when no tool call was parsed.
std::string without_think_markers(std::string_view t, bool starts_in_reasoning) {
  std::string s(t);
  if (!starts_in_reasoning) {
    if (s.rfind("<think>", 0) != 0) return s;
    s.erase(0, 7);
  }
  size_t p = s.find("</think>");
  if (p != std::string::npos) s.erase(p, 8);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const dss::ChatFormat formats[] = {dss::ChatFormat::kV3, dss::ChatFormat::kV31,
                                     dss::ChatFormat::kV32};
  const dss::ChatFormat f = formats[data[0] % 3];
  dss::OutputParserOptions o;
  o.starts_in_reasoning = (data[0] >> 2) & 1;
  o.parse_tools = !((data[0] >> 3) & 1);
  std::string_view text(reinterpret_cast<const char*>(data + 3), size - 3);
  size_t a = text.empty() ? 0 : data[1] % (text.size() + 1);
  size_t b = text.empty() ? 0 : a + data[2] % (text.size() - a + 1);
  dss::ParsedOutput whole = dss::ChatOutputParser::parse_all(f, o, text);
  require(parse(f, o, text, a, b) == whole, "chunked parse differs from one-shot parse");
  if (whole.tool_calls.empty()) {
    require(whole.reasoning_content + whole.content ==
                without_think_markers(text, o.starts_in_reasoning),
            "text dropped although no tool call was parsed");
  }
  for (const auto& c : whole.tool_calls) require(!c.name.empty(), "tool call without a name");
  return 0;
}
