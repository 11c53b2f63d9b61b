// ChoiceStream: the per-choice response builder, fed scripted model output (text or the real
// tokenizer's ids). The random demo model never emits tool calls, so this is where the
// streamed tool-call path is made deterministic: a scripted V3 tool-call transcript must give a
// `tool_calls` delta (id, name, arguments) whatever the chunking, and the fold of the streamed
// deltas must equal the non-streamed message (what the server sends with stream: false).
#include "server/choice_stream.h"

#include <gtest/gtest.h>

#include "server/response_json.h"
#include "tests/text/text_test_util.h"
#include "text/parse_event.h"

namespace dss {
namespace {

const std::string kToolTranscript =
    "<think>\nweather needs a tool\n</think>\n\nChecking."
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
    "{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";

ChoiceStreamOptions chat_opts() {
  ChoiceStreamOptions o;
  o.chat = true;
  o.format = ChatFormat::kV3;
  o.parser.parse_tools = true;
  o.parser.parse_reasoning = true;
  o.parser.tool_id_prefix = "call_7_";
  return o;
}

// Streams `text` in chunks of `step` bytes; returns the deltas' JSON, and the folded output.
std::vector<Json> stream_text(ChoiceStream& s, const std::string& text, size_t step) {
  std::vector<Json> deltas;
  for (size_t i = 0; i < text.size(); i += step) {
    ChoiceDelta d;
    s.push_text(std::string_view(text).substr(i, step), d);
    if (!d.events.empty()) deltas.push_back(to_openai_delta(d.events));
  }
  ChoiceDelta d;
  s.finish(d);
  if (!d.events.empty()) deltas.push_back(to_openai_delta(d.events));
  return deltas;
}

TEST(ChoiceStream, StreamedToolCallDeltaAtEveryChunkSize) {
  const ParsedOutput whole =
      ChatOutputParser::parse_all(ChatFormat::kV3, chat_opts().parser, kToolTranscript);
  ASSERT_EQ(whole.tool_calls.size(), 1u);
  for (size_t step = 1; step <= kToolTranscript.size(); step += (step < 16 ? 1 : 7)) {
    ChoiceStream s(nullptr, chat_opts());
    const std::vector<Json> deltas = stream_text(s, kToolTranscript, step);
    // What a client rebuilds from the deltas equals the non-streamed message.
    std::string content, reasoning;
    Json calls = Json::array();
    for (const Json& d : deltas) {
      content += d.value("content", "");
      reasoning += d.value("reasoning_content", "");
      for (const Json& c : d.value("tool_calls", Json::array())) calls.push_back(c);
    }
    EXPECT_EQ(content, "\n\nChecking.") << step;
    EXPECT_EQ(reasoning, "\nweather needs a tool\n") << step;
    ASSERT_EQ(calls.size(), 1u) << step;
    EXPECT_EQ(calls[0]["index"], 0);
    EXPECT_EQ(calls[0]["id"], "call_7_0");
    EXPECT_EQ(calls[0]["type"], "function");
    EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
    EXPECT_EQ(Json::parse(calls[0]["function"]["arguments"].get<std::string>()),
              Json({{"city", "Paris"}}));
    EXPECT_EQ(s.output(), whole) << step;
    EXPECT_TRUE(s.has_tool_calls());
    const OrderedJson msg = chat_message_json(s.output());
    EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(msg["content"], "\n\nChecking.");
  }
}

TEST(ChoiceStream, RealTokensOneByOneGiveTheSameToolCall) {
  const Tokenizer& tok = test::real_tokenizer();
  const std::vector<TokenId> ids = tok.encode(kToolTranscript + "<｜end▁of▁sentence｜>");
  ChoiceStreamOptions o = chat_opts();
  o.hidden_final_tokens = {tok.eos_id()};
  ChoiceStream s(&tok, o);
  int n_tool_deltas = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    TokenEvent e;
    e.has_token = true;
    e.token = ids[i];
    e.logprob = -0.5f;
    if (i + 1 == ids.size()) e.finish = FinishReason::kStop;
    ChoiceDelta d;
    s.push_token(e, /*with_logprobs=*/true, d);
    if (e.is_last()) s.finish(d);
    EXPECT_EQ(d.token_ids.size(), 1u);
    EXPECT_EQ(d.logprobs.size(), 1u);
    if (to_openai_delta(d.events).contains("tool_calls")) ++n_tool_deltas;
  }
  EXPECT_EQ(n_tool_deltas, 1);
  EXPECT_EQ(s.n_tokens(), static_cast<int32_t>(ids.size()));  // EOS counted, not shown
  EXPECT_EQ(s.output().content, "\n\nChecking.");
  ASSERT_EQ(s.output().tool_calls.size(), 1u);
  EXPECT_EQ(s.output().tool_calls[0].name, "get_weather");
}

TEST(ChoiceStream, StopStringCutsTextAndStops) {
  ChoiceStreamOptions o;
  o.chat = false;
  o.stop = {"STOP"};
  ChoiceStream s(nullptr, o);
  ChoiceDelta d;
  s.push_text("hello ST", d);
  EXPECT_EQ(d.text, "hello ");  // "ST" held back: it may start the stop string
  EXPECT_FALSE(s.stopped());
  s.push_text("OP and more", d);
  EXPECT_TRUE(s.stopped());
  s.push_text("ignored", d);
  s.finish(d);
  EXPECT_EQ(s.text(), "hello ");
}

TEST(ChoiceStream, CompletionsModeDoesNotParse) {
  ChoiceStreamOptions o;
  o.chat = false;
  ChoiceStream s(nullptr, o);
  const std::vector<Json> deltas = stream_text(s, kToolTranscript, 5);
  EXPECT_TRUE(deltas.empty());
  EXPECT_EQ(s.text(), kToolTranscript);
  EXPECT_FALSE(s.has_tool_calls());
}

TEST(ChoiceStream, NoTokenizerStillCountsTokens) {
  ChoiceStream s(nullptr, chat_opts());
  TokenEvent e;
  e.has_token = true;
  e.token = 5;
  ChoiceDelta d;
  s.push_token(e, false, d);
  s.push_token(e, false, d);
  EXPECT_EQ(s.n_tokens(), 2);
  EXPECT_EQ(d.token_ids, (std::vector<TokenId>{5, 5}));
  EXPECT_TRUE(d.logprobs.empty());
}

}  // namespace
}  // namespace dss
