// Forced tool calls (server/tool_call_grammar.h) on the real DeepSeek vocabulary. The reference
// for each format is the chat template's own rendering of an assistant tool-call turn (V3/V3.1:
// the official Jinja templates, V3.2: the reference encoder, reproduced byte for byte by
// render_chat and its golden tests): that text, tokenized as the model would emit it, must be
// accepted token by token and end the grammar. Also: the markers are reachable only as their
// control tokens, arguments follow the schema, named / parallel_tool_calls limit the calls,
// strict tools under tool_choice auto are held to their schema from the block's marker on, and
// schemas the format cannot carry are errors naming the field.
#include "server/tool_call_grammar.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "grammar/matcher.h"
#include "text/chat_template.h"
#include "text/chat_tokens.h"
#include "text/tokenizer.h"

namespace dss {
namespace {

const Tokenizer& tokenizer() {
  static const Tokenizer* tok = [] {
    Result<Tokenizer> t = Tokenizer::load_dir(DSS_SOURCE_DIR "/third_party/tokenizer/deepseek-v3");
    EXPECT_TRUE(t) << t.message();
    return new Tokenizer(std::move(t).value());
  }();
  return *tok;
}

std::shared_ptr<const grammar::TokenVocab> vocab() {
  static auto v =
      grammar::TokenVocab::from_tokenizer(tokenizer(), 129280, tool_call_control_tokens());
  return v;
}

const OrderedJson kTools = OrderedJson::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12},
                   "days": {"type": "integer", "minimum": 1, "maximum": 7},
                   "unit": {"enum": ["c", "f"]}},
    "required": ["city", "days"]}}},
  {"type": "function", "function": {"name": "noop"}}])");

std::shared_ptr<grammar::CompiledGrammar> compile(ChatFormat fmt, const std::string& name = "",
                                                  bool several = true) {
  grammar::GrammarCompiler compiler(vocab());
  auto g = compile_forced_tool_calls({fmt, &kTools, name, several}, compiler);
  EXPECT_TRUE(g) << g.message();
  return g ? *g : nullptr;
}

// The call block of an assistant turn with `calls`, as the format's template renders it.
std::string rendered_calls(ChatFormat fmt, const std::vector<ChatToolCall>& calls) {
  ChatRequest req;
  req.messages.push_back({.role = "user", .content = "weather?"});
  req.messages.push_back({.role = "assistant", .content = std::nullopt, .tool_calls = calls});
  req.tools = kTools;
  Result<std::string> text = render_chat(fmt, req);
  EXPECT_TRUE(text) << text.message();
  const std::string dsml = tok::kDsml;
  const std::string begin =
      fmt == ChatFormat::kV32 ? "\n\n<" + dsml + "function_calls>" : std::string(tok::kCallsBegin);
  const std::string end =
      fmt == ChatFormat::kV32 ? "</" + dsml + "function_calls>" : std::string(tok::kCallsEnd);
  // The last begin marker: the V3.1 and V3.2 tool prompts spell the markers in their instructions.
  const size_t b = text->rfind(begin);
  EXPECT_NE(b, std::string::npos) << *text;
  std::string block = text->substr(b);
  const size_t e = block.find(end);
  if (e != std::string::npos) return block.substr(0, e + end.size());
  // The Dec-2024 V3 template leaves a single call's block open (deepseek-reference.md §4.2);
  // the 0324 template closes it as every later call does.
  EXPECT_EQ(fmt, ChatFormat::kV3) << *text;
  const std::string call_end = tok::kCallEnd;
  return block.substr(0, block.rfind(call_end) + call_end.size()) + end;
}

// Feeds `text`, tokenized as the model emits it (added tokens as their ids), token by token.
struct Fed {
  bool accepted = false;  // every token accepted
  size_t at = 0;          // tokens accepted
  bool ends = false;      // accepted, and the grammar may stop right after
};
Fed feed(const std::shared_ptr<grammar::CompiledGrammar>& g, const std::string& text) {
  grammar::GrammarMatcher m(g);
  const std::vector<TokenId> ids = tokenizer().encode(text, EncodeOptions{false, true});
  Fed f;
  while (f.at < ids.size() && m.accept_token(ids[f.at])) ++f.at;
  f.accepted = f.at == ids.size();
  f.ends = f.accepted && m.can_terminate();
  return f;
}

const std::vector<ChatToolCall> kTwoCalls = {
    {.id = "a", .name = "get_weather", .arguments = R"({"city": "Paris", "days": 3, "unit": "c"})"},
    {.id = "b", .name = "noop", .arguments = "{}"}};

TEST(ToolCallGrammar, AcceptsEachTemplatesOwnRendering) {
  for (ChatFormat fmt : {ChatFormat::kV3, ChatFormat::kV31, ChatFormat::kV32}) {
    SCOPED_TRACE(chat_format_name(fmt));
    const std::string text = rendered_calls(fmt, kTwoCalls);
    const Fed all = feed(compile(fmt), text);
    EXPECT_TRUE(all.ends) << "stopped at token " << all.at << " of " << text;
    // The same block holding only the first call (one call allowed: parallel_tool_calls false).
    const std::string one = rendered_calls(fmt, {kTwoCalls[0]});
    EXPECT_TRUE(feed(compile(fmt, "", false), one).ends) << one;
    EXPECT_FALSE(feed(compile(fmt, "", false), text).accepted) << "second call allowed";
    // Named: only that tool.
    EXPECT_TRUE(feed(compile(fmt, "get_weather"), one).ends);
    EXPECT_FALSE(feed(compile(fmt, "noop"), one).accepted);
  }
}

TEST(ToolCallGrammar, ArgumentsFollowTheSchema) {
  for (ChatFormat fmt : {ChatFormat::kV3, ChatFormat::kV31, ChatFormat::kV32}) {
    SCOPED_TRACE(chat_format_name(fmt));
    for (const char* bad : {R"({"city": "Paris", "days": 9})",          // above maximum
                            R"({"days": 3})",                           // required city missing
                            R"({"city": "Paris", "days": 3, "x": 1})",  // undeclared
                            R"({"city": "Paris", "days": 3, "unit": "k"})"}) {
      const std::string text = rendered_calls(fmt, {{.name = "get_weather", .arguments = bad}});
      EXPECT_FALSE(feed(compile(fmt), text).accepted) << text;
    }
    const std::string unknown = rendered_calls(fmt, {{.name = "get_time", .arguments = "{}"}});
    EXPECT_FALSE(feed(compile(fmt), unknown).accepted) << unknown;
  }
}

TEST(ToolCallGrammar, StrictToolsUnderAutoFromTheBlockMarkerOn) {
  OrderedJson tools = kTools;
  tools[0]["function"]["strict"] = true;  // get_weather strict, noop not
  grammar::GrammarCompiler compiler(vocab());
  for (ChatFormat fmt : {ChatFormat::kV3, ChatFormat::kV31, ChatFormat::kV32}) {
    SCOPED_TRACE(chat_format_name(fmt));
    ForcedToolCalls f{fmt, &tools, "", true};
    f.after_marker = true;
    auto g = compile_forced_tool_calls(f, compiler);
    ASSERT_TRUE(g) << g.message();
    // What follows the marker in the template's rendering.
    auto after_marker = [&](const std::vector<ChatToolCall>& calls) {
      const std::string block = rendered_calls(fmt, calls);
      const std::string marker = tool_call_block_marker(fmt);
      return block.substr(block.find(marker) + marker.size());
    };
    EXPECT_TRUE(feed(*g, after_marker(kTwoCalls)).ends) << after_marker(kTwoCalls);
    // The non-strict tool takes any arguments; the strict one only its schema's.
    const std::string free = after_marker({{.name = "noop", .arguments = R"({"any": [1, "x"]})"}});
    EXPECT_TRUE(feed(*g, free).ends) << free;
    const std::string bad =
        after_marker({{.name = "get_weather", .arguments = R"({"city": "Paris", "days": 9})"}});
    EXPECT_FALSE(feed(*g, bad).accepted) << bad;
  }
  EXPECT_TRUE(has_strict_tool(tools));
  EXPECT_FALSE(has_strict_tool(kTools));
  for (const char* not_true : {R"("yes")", "1", "null", "{}"}) {  // only the boolean true counts
    tools[0]["function"]["strict"] = OrderedJson::parse(not_true);
    EXPECT_FALSE(has_strict_tool(tools)) << not_true;
  }
}

TEST(ToolCallGrammar, MarkersOnlyAsTheirControlTokens) {
  for (ChatFormat fmt : {ChatFormat::kV3, ChatFormat::kV31}) {
    auto g = compile(fmt);
    grammar::GrammarMatcher m(g);
    std::vector<uint64_t> words(vocab()->n_words());
    m.fill_next_token_bitmask(words);
    std::vector<TokenId> allowed;
    for (size_t w = 0; w < words.size(); ++w)
      for (uint64_t b = words[w]; b; b &= b - 1)
        allowed.push_back(static_cast<TokenId>(w * 64 + __builtin_ctzll(b)));
    EXPECT_EQ(allowed, std::vector<TokenId>{*tokenizer().added_token_id(tok::kCallsBegin)});
    // The marker's text spelled with ordinary tokens is not the marker.
    EXPECT_FALSE(m.accept_bytes(tok::kCallsBegin));
  }
}

TEST(ToolCallGrammar, SchemasTheFormatCannotCarryAreErrorsNamingTheField) {
  grammar::GrammarCompiler compiler(vocab());
  auto error = [&](ChatFormat fmt, const char* tools, const std::string& name = "") {
    const OrderedJson t = OrderedJson::parse(tools);
    auto g = compile_forced_tool_calls({fmt, &t, name, true}, compiler);
    EXPECT_FALSE(g) << tools;
    return g ? std::string() : g.message();
  };
  const char* any_of =
      R"([{"function": {"name": "f", "parameters": {"anyOf": [{"type": "object"}]}}}])";
  EXPECT_EQ(error(ChatFormat::kV32, any_of).rfind("tools[0].function.parameters: ", 0), 0u);
  const char* bad_kw = R"([{"function": {"name": "f", "parameters": {"type": "object",
      "properties": {"a": {"type": "string", "minProperties": 1}}}}}])";
  for (ChatFormat fmt : {ChatFormat::kV3, ChatFormat::kV31, ChatFormat::kV32}) {
    const std::string m = error(fmt, bad_kw);
    EXPECT_EQ(m.rfind("tools[0].function.parameters", 0), 0u) << m;
    EXPECT_NE(m.find("minProperties"), std::string::npos) << m;
  }
  const std::string m = error(ChatFormat::kV3, R"([{"function": {"name": "f"}}])", "g");
  EXPECT_EQ(m.rfind("tool_choice.function.name: 'g'", 0), 0u) << m;
}

}  // namespace
}  // namespace dss
