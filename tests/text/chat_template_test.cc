// Chat rendering. V3 / V3.1: byte-equal to the official Jinja templates over the conversations
// in tests/data/text/chat_cases.jsonl (regenerate: scripts/gen_chat_data). V3.2: cases written
// by hand from deepseek-reference.md §4.5 (each test names the fact it checks).
#include "text/chat_template.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/text/text_test_util.h"
#include "text/py_json.h"

namespace dss {
namespace {

ChatRequest parse(const std::string& json) {
  Result<ChatRequest> r = parse_chat_request(OrderedJson::parse(json));
  EXPECT_TRUE(r) << r.message();
  return r ? *r : ChatRequest{};
}

std::string render(ChatFormat f, const std::string& json, bool inject = true) {
  Result<std::string> r = render_chat(f, parse(json), {.inject_tool_prompt = inject});
  EXPECT_TRUE(r) << r.message();
  return r ? *r : "";
}

TEST(ChatTemplate, ByteEqualToOfficialJinjaTemplates) {
  std::vector<Json> cases = test::read_jsonl(test::data_path("chat_cases.jsonl"));
  ASSERT_GE(cases.size(), 100u);
  std::set<std::string> conversations;
  for (const Json& c : cases) {
    ChatFormat f = *parse_chat_format(c["format"].get<std::string>());
    Result<ChatRequest> req = parse_chat_request(OrderedJson::parse(c["request"].dump()));
    ASSERT_TRUE(req) << req.message();
    // The official templates ignore `tools`; compare without the optional tool prompt.
    Result<std::string> got = render_chat(f, *req, {.inject_tool_prompt = false});
    ASSERT_TRUE(got) << got.message();
    EXPECT_EQ(*got, c["prompt"].get<std::string>())
        << c["name"] << " " << c["format"] << " " << c["request"].dump();
    conversations.insert(c["name"].get<std::string>());
  }
  EXPECT_GE(conversations.size(), 30u);
}

TEST(ChatTemplate, DetectFormat) {
  EXPECT_EQ(detect_chat_format(test::real_tokenizer().chat_template(), nullptr), ChatFormat::kV3);
  EXPECT_EQ(detect_chat_format(test::read_file(test::data_path("templates/deepseek-v3.1.jinja")),
                               nullptr),
            ChatFormat::kV31);
  Json cfg = {{"model_type", "deepseek_v32"}};
  EXPECT_EQ(detect_chat_format("", &cfg), ChatFormat::kV32);
  EXPECT_EQ(parse_chat_format("v3.2"), ChatFormat::kV32);
  EXPECT_FALSE(parse_chat_format("v4"));
}

TEST(ChatTemplate, RejectsBadRequests) {
  EXPECT_FALSE(parse_chat_request(OrderedJson::parse(R"({"messages": 3})")));
  EXPECT_FALSE(parse_chat_request(OrderedJson::parse(R"({"messages": [{"role": "robot"}]})")));
  Result<ChatRequest> r = parse_chat_request(OrderedJson::parse(
      R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]})"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.message(), "messages[0].tool_calls[0].function.name: missing");
}

// §4.3: the model-card tool block, appended to the system prompt when tools are given.
TEST(ChatTemplate, V31ToolPromptFromModelCard) {
  std::string p = render(ChatFormat::kV31, R"({"messages": [{"role": "system", "content": "S"},
      {"role": "user", "content": "U"}], "tools": [{"type": "function", "function": {
      "name": "f", "description": "d", "parameters": {"type": "object", "x": "é"}}}]})");
  EXPECT_EQ(
      p,
      "<｜begin▁of▁sentence｜>S\n\n## Tools\nYou have access to the following tools:\n\n"
      "### f\nDescription: d\n\nParameters: {\"type\": \"object\", \"x\": \"\\u00e9\"}\n\n"
      "IMPORTANT: ALWAYS adhere to this exact format for tool use:\n"
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>tool_call_name<｜tool▁sep｜>tool_call_arguments"
      "<｜tool▁call▁end｜>{{additional_tool_calls}}<｜tool▁calls▁end｜>\n\nWhere:\n"
      "- `tool_call_name` must be an exact match to one of the available tools\n"
      "- `tool_call_arguments` must be valid JSON that strictly follows the tool's "
      "Parameters Schema\n- For multiple tool calls, chain them directly without separators "
      "or spaces<｜User｜>U<｜Assistant｜></think>");
}

// §4.5 "user": chat mode ends every user turn `<｜Assistant｜></think>`; BOS once.
TEST(ChatTemplateV32, ChatModeUserTurns) {
  EXPECT_EQ(render(ChatFormat::kV32, R"({"messages": [{"role": "system", "content": "S"},
      {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
      {"role": "user", "content": "c"}]})"),
            "<｜begin▁of▁sentence｜>S<｜User｜>a<｜Assistant｜></think>b<｜end▁of▁sentence｜>"
            "<｜User｜>c<｜Assistant｜></think>");
}

// §4.5 "user" + "assistant" + drop_thinking: in thinking mode only the last user turn opens
// `<think>`; reasoning is rendered (with `</think>`) only after the last user message.
TEST(ChatTemplateV32, ThinkingModeReasoningOnlyAfterLastUser) {
  EXPECT_EQ(render(ChatFormat::kV32, R"({"thinking": true, "messages": [
      {"role": "user", "content": "hello"},
      {"role": "assistant", "content": "Hello! I am DeepSeek.", "reasoning_content": "old"},
      {"role": "user", "content": "1+1=?"}]})"),
            "<｜begin▁of▁sentence｜><｜User｜>hello<｜Assistant｜></think>Hello! I am "
            "DeepSeek.<｜end▁of▁sentence｜><｜User｜>1+1=?<｜Assistant｜><think>");
  EXPECT_EQ(
      render(ChatFormat::kV32, R"({"thinking": true, "messages": [
      {"role": "user", "content": "q"},
      {"role": "assistant", "content": "A", "reasoning_content": "R"}]})"),
      "<｜begin▁of▁sentence｜><｜User｜>q<｜Assistant｜><think>R</think>A<｜end▁of▁sentence｜>");
}

// §4.5 example (V32/test_output.txt, chat mode, one call) and the "tool" rule.
TEST(ChatTemplateV32, DsmlToolCallAndResults) {
  std::string p = render(ChatFormat::kV32, R"({"messages": [
      {"role": "user", "content": "明天杭州和北京的天气怎么样？"},
      {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {
          "name": "get_datetime", "arguments": "{\"timezone\": \"Asia/Shanghai\"}"}}]},
      {"role": "tool", "content": "{\"date\": \"2025-12-01\"}"}]})");
  EXPECT_EQ(
      p,
      "<｜begin▁of▁sentence｜><｜User｜>明天杭州和北京的天气怎么样？<｜Assistant｜></think>\n\n"
      "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_datetime\">\n"
      "<｜DSML｜parameter name=\"timezone\" string=\"true\">Asia/Shanghai</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n</｜DSML｜function_calls><｜end▁of▁sentence｜>\n\n<function_results>\n"
      "<result>{\"date\": \"2025-12-01\"}</result>\n</function_results>\n\n</think>");
}

// §4.5 "assistant": params string="false" carry json.dumps(value, ensure_ascii=False); several
// invokes are joined by "\n"; several results share one <function_results> block, and in
// thinking mode after the last user message the block is followed by "\n\n<think>".
TEST(ChatTemplateV32, NonStringParamsMultipleCallsThinking) {
  std::string p = render(ChatFormat::kV32, R"({"thinking": true, "messages": [
      {"role": "user", "content": "u"},
      {"role": "assistant", "content": "", "reasoning_content": "plan", "tool_calls": [
        {"function": {"name": "a", "arguments": "{\"n\": 3, \"l\": [1, \"é\"], \"o\": {\"k\": true}}"}},
        {"function": {"name": "b", "arguments": "{}"}}]},
      {"role": "tool", "content": "r1"}, {"role": "tool", "content": "r2"}]})");
  EXPECT_EQ(
      p,
      "<｜begin▁of▁sentence｜><｜User｜>u<｜Assistant｜><think>plan</think>\n\n"
      "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"a\">\n"
      "<｜DSML｜parameter name=\"n\" string=\"false\">3</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"l\" string=\"false\">[1, \"é\"]</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"o\" string=\"false\">{\"k\": true}</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n<｜DSML｜invoke name=\"b\">\n\n</｜DSML｜invoke>\n"
      "</｜DSML｜function_calls><｜end▁of▁sentence｜>\n\n<function_results>\n<result>r1</result>"
      "\n<result>r2</result>\n</function_results>\n\n<think>");
}

// §4.5 "system" + tools block: system content, "\n\n", the tools template, one
// json.dumps(function, ensure_ascii=False) line per tool inside <functions>.
TEST(ChatTemplateV32, ToolsBlockInSystem) {
  std::string p = render(ChatFormat::kV32, R"({"messages": [{"role": "system", "content": "S"},
      {"role": "user", "content": "u"}], "tools": [
      {"type": "function", "function": {"name": "f", "description": "天气", "parameters": {"type": "object"}}},
      {"type": "function", "function": {"name": "g"}}]})");
  const std::string head =
      "<｜begin▁of▁sentence｜>S\n\n## Tools\n\nYou have access to a set of tools you can use to "
      "answer the user's question.\nYou can invoke functions by writing a "
      "\"<｜DSML｜function_calls>\" block like the following as part of your reply to the user:\n";
  EXPECT_EQ(p.substr(0, head.size()), head);
  EXPECT_NE(p.find("String and scalar parameters should be specified as is without any escaping "
                   "or quotes, while lists and objects should use JSON format. The \"string\" "
                   "attribute should be set to \"true\" for string type parameters and \"false\" "
                   "for other types (numbers, booleans, arrays, objects)."),
            std::string::npos);
  const std::string tail =
      "Here are the functions available in JSONSchema format:\n<functions>\n"
      "{\"name\": \"f\", \"description\": \"天气\", \"parameters\": {\"type\": \"object\"}}\n"
      "{\"name\": \"g\"}\n</functions>\n<｜User｜>u<｜Assistant｜></think>";
  ASSERT_GE(p.size(), tail.size());
  EXPECT_EQ(p.substr(p.size() - tail.size()), tail);
}

// §4.5 "system" response_format rule; tools with no system message get an empty one.
TEST(ChatTemplateV32, ResponseFormatAndSyntheticSystem) {
  std::string p = render(ChatFormat::kV32, R"({"messages": [{"role": "user", "content": "u"}],
      "response_format": {"type": "json_object"}})");
  EXPECT_EQ(
      p,
      "<｜begin▁of▁sentence｜>\n\n## Response Format:\n\nYou MUST strictly adhere to the "
      "following schema to reply:\n{\"type\": \"json_object\"}<｜User｜>u<｜Assistant｜></think>");
}

TEST(ChatTemplateV32, BadToolSequencesAreErrors) {
  ChatRequest r = parse(R"({"messages": [{"role": "user", "content": "u"},
      {"role": "tool", "content": "orphan"}]})");
  EXPECT_FALSE(render_chat(ChatFormat::kV32, r));
  r = parse(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f",
      "arguments": "[1]"}}]}]})");
  EXPECT_FALSE(render_chat(ChatFormat::kV32, r));
}

TEST(PyJson, MatchesPythonJsonDumps) {
  OrderedJson v =
      OrderedJson::parse(R"({"b": 1, "a": [1.5, null, true, "x\"\n\u0001é😀"], "c": {}})");
  EXPECT_EQ(py_json_dumps(v, false),
            "{\"b\": 1, \"a\": [1.5, null, true, \"x\\\"\\n\\u0001é😀\"], \"c\": {}}");
  EXPECT_EQ(
      py_json_dumps(v, true),
      "{\"b\": 1, \"a\": [1.5, null, true, \"x\\\"\\n\\u0001\\u00e9\\ud83d\\ude00\"], \"c\": {}}");
}

}  // namespace
}  // namespace dss
