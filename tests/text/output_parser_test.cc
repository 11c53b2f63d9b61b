// Streaming output parsers (reasoning + tool calls, all three formats) on the transcripts in
// tests/data/text/transcripts.jsonl (hand-written from deepseek-reference.md §4.2, §4.3, §4.5).
// Checks: the non-streamed parse equals the expected result, and chunked feeding (every single
// split point, and 1,000 random multi-split chunkings per transcript) folds to the same result.
#include <gtest/gtest.h>

#include <random>

#include "tests/text/text_test_util.h"
#include "text/chat_output_parser.h"
#include "text/detokenizer.h"
#include "text/utf8.h"

namespace dss {
namespace {

struct Transcript {
  std::string name, text;
  ChatFormat format;
  OutputParserOptions opts;
  Json expect;
};

std::vector<Transcript> load_transcripts() {
  std::vector<Transcript> out;
  for (const Json& j : test::read_jsonl(test::data_path("transcripts.jsonl"))) {
    Transcript t;
    t.name = j["name"];
    t.text = j["text"];
    t.format = *parse_chat_format(j["format"].get<std::string>());
    t.opts.starts_in_reasoning = j["starts_in_reasoning"];
    t.opts.parse_tools = j["parse_tools"];
    t.expect = j["expect"];
    out.push_back(std::move(t));
  }
  return out;
}

ParsedOutput parse_chunks(const Transcript& t, const std::vector<size_t>& cuts) {
  ChatOutputParser p(t.format, t.opts);
  ParsedOutput r;
  size_t prev = 0;
  for (size_t c : cuts) {
    r.apply(p.feed(std::string_view(t.text).substr(prev, c - prev)));
    prev = c;
  }
  r.apply(p.feed(std::string_view(t.text).substr(prev)));
  r.apply(p.finish());
  return r;
}

std::string show(const ParsedOutput& r) {
  Json calls = Json::array();
  for (const auto& c : r.tool_calls) calls.push_back({c.id, c.name, c.arguments});
  return Json{{"content", r.content},
              {"reasoning", r.reasoning_content},
              {"calls", calls},
              {"warnings", r.warnings}}
      .dump();
}

TEST(OutputParser, TranscriptsParseAsExpected) {
  std::vector<Transcript> ts = load_transcripts();
  ASSERT_GE(ts.size(), 30u);
  for (const Transcript& t : ts) {
    ParsedOutput r = ChatOutputParser::parse_all(t.format, t.opts, t.text);
    EXPECT_EQ(r.content, t.expect["content"].get<std::string>()) << t.name << " " << show(r);
    EXPECT_EQ(r.reasoning_content, t.expect["reasoning_content"].get<std::string>()) << t.name;
    ASSERT_EQ(r.tool_calls.size(), t.expect["tool_calls"].size()) << t.name << " " << show(r);
    for (size_t i = 0; i < r.tool_calls.size(); ++i) {
      EXPECT_EQ(r.tool_calls[i].name, t.expect["tool_calls"][i]["name"].get<std::string>());
      EXPECT_EQ(r.tool_calls[i].arguments,
                t.expect["tool_calls"][i]["arguments"].get<std::string>())
          << t.name;
      EXPECT_EQ(r.tool_calls[i].id, "call_" + std::to_string(i));
    }
    EXPECT_EQ(!r.warnings.empty(), t.expect["warning"].get<bool>()) << t.name << " " << show(r);
    // Never "tools called" with nothing in the list, never text lost.
    if (!r.warnings.empty() || r.tool_calls.empty()) {
      EXPECT_FALSE(r.content.empty() && r.reasoning_content.empty() && r.tool_calls.empty() &&
                   !t.text.empty())
          << t.name;
    }
  }
}

TEST(OutputParser, EverySingleSplitMatchesUnsplit) {
  for (const Transcript& t : load_transcripts()) {
    ParsedOutput whole = parse_chunks(t, {});
    for (size_t i = 0; i <= t.text.size(); ++i) {
      ParsedOutput r = parse_chunks(t, {i});
      ASSERT_EQ(r, whole) << t.name << " split at " << i << "\n" << show(r) << "\n" << show(whole);
    }
  }
}

TEST(OutputParser, RandomMultiSplitsMatchUnsplit) {
  std::mt19937_64 rng(1234);
  for (const Transcript& t : load_transcripts()) {
    ParsedOutput whole = parse_chunks(t, {});
    for (int k = 0; k < 1000; ++k) {
      std::vector<size_t> cuts;
      size_t n_cuts = 1 + rng() % std::max<size_t>(1, std::min<size_t>(t.text.size(), 40));
      for (size_t c = 0; c < n_cuts; ++c) cuts.push_back(rng() % (t.text.size() + 1));
      std::sort(cuts.begin(), cuts.end());
      ParsedOutput r = parse_chunks(t, cuts);
      ASSERT_EQ(r, whole) << t.name << " trial " << k << "\n" << show(r);
    }
  }
}

TEST(OutputParser, OpenAiDeltaShape) {
  ChatOutputParser p(ChatFormat::kV31, {.starts_in_reasoning = true});
  std::vector<ParseEvent> ev = p.feed(
      "hm</think>ok<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"a\": 1}"
      "<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
  Json d = to_openai_delta(ev);
  EXPECT_EQ(d["reasoning_content"], "hm");
  EXPECT_EQ(d["content"], "ok");
  ASSERT_EQ(d["tool_calls"].size(), 1u);
  EXPECT_EQ(d["tool_calls"][0]["index"], 0);
  EXPECT_EQ(d["tool_calls"][0]["id"], "call_0");
  EXPECT_EQ(d["tool_calls"][0]["type"], "function");
  EXPECT_EQ(d["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(d["tool_calls"][0]["function"]["arguments"], "{\"a\": 1}");
  EXPECT_TRUE(p.has_tool_calls());
  EXPECT_TRUE(to_openai_delta(p.finish()).empty());
}

// Detokenizer: pieces are complete UTF-8 and concatenate to the batch decode.
TEST(Detokenizer, IncrementalEqualsBatchDecode) {
  const Tokenizer& tok = test::real_tokenizer();
  std::vector<Json> cases = test::read_jsonl(test::data_path("tokenizer_cases.jsonl"));
  size_t n = 0;
  for (const Json& c : cases) {
    std::vector<TokenId> ids = c["ids"].get<std::vector<TokenId>>();
    for (bool skip : {false, true}) {
      IncrementalDetokenizer d(tok, skip);
      std::string all;
      for (TokenId id : ids) {
        std::string piece = d.push(id);
        ASSERT_TRUE(utf8_is_valid(piece));
        all += piece;
      }
      all += d.finish();
      ASSERT_EQ(all, tok.decode_text(ids, skip)) << Json(ids).dump();
      ++n;
    }
  }
  EXPECT_GT(n, 10000u);
}

TEST(Detokenizer, HoldsSplitCharacterAndKeepsSpecialTokens) {
  const Tokenizer& tok = test::real_tokenizer();
  std::vector<TokenId> ids = tok.encode("🚀");
  ASSERT_GT(ids.size(), 1u);  // byte-level BPE splits this emoji
  IncrementalDetokenizer d(tok);
  EXPECT_EQ(d.push(ids[0]), "");
  EXPECT_GT(d.n_pending(), 0u);
  std::string rest;
  for (size_t i = 1; i < ids.size(); ++i) rest += d.push(ids[i]);
  EXPECT_EQ(rest, "🚀");
  EXPECT_EQ(d.push(tok.eos_id()), "<｜end▁of▁sentence｜>");
  IncrementalDetokenizer hidden(tok, /*skip_special=*/true);
  EXPECT_EQ(hidden.push(tok.eos_id()), "");
  EXPECT_EQ(hidden.push(128806), "<｜tool▁calls▁begin｜>");  // control token, not "special"
}

// End to end: tokenize each transcript, stream ids through the detokenizer into the parser.
TEST(OutputParser, TokenStreamThroughDetokenizerMatches) {
  const Tokenizer& tok = test::real_tokenizer();
  for (const Transcript& t : load_transcripts()) {
    ParsedOutput whole = parse_chunks(t, {});
    IncrementalDetokenizer d(tok);
    ChatOutputParser p(t.format, t.opts);
    ParsedOutput r;
    for (TokenId id : tok.encode(t.text)) r.apply(p.feed(d.push(id)));
    r.apply(p.feed(d.finish()));
    r.apply(p.finish());
    EXPECT_EQ(r, whole) << t.name;
  }
}

}  // namespace
}  // namespace dss
