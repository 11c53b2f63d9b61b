// Tokenizer vs Hugging Face `tokenizers`: tests/data/text/tokenizer_cases.jsonl holds >= 5,000
// strings with the ids and decoded text HF produced (regenerate: scripts/gen_tokenizer_data).
#include "text/tokenizer.h"

#include <gtest/gtest.h>

#include <thread>

#include "tests/text/text_test_util.h"
#include "text/utf8.h"

namespace dss {
namespace {

using test::real_tokenizer;

std::string ids_str(const std::vector<TokenId>& v) { return Json(v).dump(); }

TEST(Tokenizer, MatchesHuggingFaceOnCorpus) {
  const Tokenizer& tok = real_tokenizer();
  std::vector<Json> cases = test::read_jsonl(test::data_path("tokenizer_cases.jsonl"));
  ASSERT_GE(cases.size(), 5000u);
  size_t n_encode = 0, n_decode = 0, n_fail = 0;
  for (const Json& c : cases) {
    std::vector<TokenId> want = c["ids"].get<std::vector<TokenId>>();
    std::string decoded = c["decoded"].get<std::string>();
    if (c.contains("text") || c.contains("hex")) {
      std::string text = c.contains("text") ? c["text"].get<std::string>()
                                            : test::from_hex(c["hex"].get<std::string>());
      std::vector<TokenId> got = tok.encode(text);
      ++n_encode;
      if (got != want && ++n_fail <= 10) {
        ADD_FAILURE() << c["cat"] << " " << Json(utf8_lossy(text)).dump() << "\n want "
                      << ids_str(want) << "\n got  " << ids_str(got);
      }
      // Round trip: our bytes are exactly the (repaired) input; HF's string is the same.
      EXPECT_EQ(tok.decode(got), utf8_lossy(text));
    }
    // Decode direction: our decode of HF's ids equals HF's decode.
    EXPECT_EQ(tok.decode_text(want), decoded) << ids_str(want);
    if (c.contains("decoded_skip")) {
      EXPECT_EQ(tok.decode_text(want, /*skip_special=*/true), c["decoded_skip"].get<std::string>())
          << ids_str(want);
    }
    ++n_decode;
  }
  EXPECT_EQ(n_fail, 0u);
  EXPECT_GE(n_encode, 5000u);
  std::printf("compared %zu encodes and %zu decodes with HF\n", n_encode, n_decode);
}

// deepseek-reference.md §4.1 worked example (from the V3.2 README). The V3.2 tokenizer names
// ids 128798/128799 `<think>`/`</think>` (§4.1 table); our V3 file has placeholders there, so
// the test renames those two added tokens and then expects the README ids exactly.
TEST(Tokenizer, ReferenceWorkedExampleWithThinkTokens) {
  Result<Json> j = load_json_file(test::tokenizer_dir() + "/tokenizer.json");
  ASSERT_TRUE(j) << j.message();
  for (Json& a : (*j)["added_tokens"]) {
    if (a["id"] == 128798) a["content"] = "<think>";
    if (a["id"] == 128799) a["content"] = "</think>";
  }
  Result<Tokenizer> tok = Tokenizer::from_json(*j, nullptr);
  ASSERT_TRUE(tok) << tok.message();
  const std::string prompt =
      "<｜begin▁of▁sentence｜><｜User｜>hello<｜Assistant｜></think>Hello! I am "
      "DeepSeek.<｜end▁of▁sentence｜><｜User｜>1+1=?<｜Assistant｜><think>";
  std::vector<TokenId> want = {0,      128803, 33310, 128804, 128799, 19923,  3,
                               342,    1030,   22651, 4374,   1465,   16,     1,
                               128803, 19,     13,    19,     127252, 128804, 128798};
  EXPECT_EQ(tok->encode(prompt), want);
  EXPECT_EQ(tok->decode(want), prompt);
}

TEST(Tokenizer, SameExampleWithV3FileSpellsThinkAsText) {
  // Ids from HF `tokenizers` on the unmodified V3 tokenizer.json: `</think>` is plain text.
  const std::string prompt = "<｜User｜>hello<｜Assistant｜></think>Hello";
  EXPECT_EQ(real_tokenizer().encode(prompt),
            (std::vector<TokenId>{128803, 33310, 128804, 1718, 37947, 32, 19923}));
}

TEST(Tokenizer, SpecialTokensAndLookAlikes) {
  const Tokenizer& tok = real_tokenizer();
  EXPECT_EQ(tok.bos_id(), 0);
  EXPECT_EQ(tok.eos_id(), 1);
  EXPECT_TRUE(tok.add_bos_default());
  EXPECT_EQ(tok.added_token_id("<｜tool▁sep｜>"), std::optional<TokenId>(128814));
  EXPECT_EQ(tok.encode("<｜User｜>"), std::vector<TokenId>{128803});
  // ASCII `|` look-alike is not the special token.
  std::vector<TokenId> ascii = tok.encode("<|User|>");
  EXPECT_GT(ascii.size(), 1u);
  for (TokenId id : ascii) EXPECT_FALSE(tok.is_added(id));
  // parse_special = false: the real token text is encoded as plain text.
  std::vector<TokenId> plain = tok.encode("<｜User｜>", {.add_bos = false, .parse_special = false});
  EXPECT_GT(plain.size(), 1u);
  for (TokenId id : plain) EXPECT_FALSE(tok.is_added(id));
  EXPECT_EQ(tok.decode(plain), "<｜User｜>");
  // BOS only when asked: rendered prompts already contain its text.
  EXPECT_EQ(tok.encode("hi", {.add_bos = true}).front(), 0);
  EXPECT_EQ(tok.encode("<｜begin▁of▁sentence｜>hi"), tok.encode("hi", {.add_bos = true}));
}

TEST(Tokenizer, DecodeSkipsOnlySpecialFlaggedTokens) {
  const Tokenizer& tok = real_tokenizer();
  std::vector<TokenId> ids = {0, 128803, 33310, 1};
  EXPECT_EQ(tok.decode(ids, true), "<｜User｜>hello");  // User is added but not "special"
  EXPECT_EQ(tok.decode(ids, false), "<｜begin▁of▁sentence｜><｜User｜>hello<｜end▁of▁sentence｜>");
  EXPECT_EQ(tok.decode(std::vector<TokenId>{-5, 999999}), "");
}

// Contract: one Tokenizer is shared by all request threads (const methods, no hidden state).
TEST(Tokenizer, ConcurrentEncodeGivesSameIds) {
  const Tokenizer& tok = real_tokenizer();
  std::vector<Json> cases = test::read_jsonl(test::data_path("tokenizer_cases.jsonl"));
  std::vector<std::thread> threads;
  std::vector<size_t> mismatches(4, 0);
  for (size_t t = 0; t < mismatches.size(); ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < cases.size(); i += 3) {
        if (!cases[i].contains("text")) continue;
        if (tok.encode(cases[i]["text"].get<std::string>()) !=
            cases[i]["ids"].get<std::vector<TokenId>>()) {
          ++mismatches[t];
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<size_t>(4, 0));
}

TEST(Tokenizer, RejectsUnsupportedJson) {
  Json j = {{"model", {{"type", "WordPiece"}}}};
  EXPECT_FALSE(Tokenizer::from_json(j, nullptr));
  EXPECT_FALSE(Tokenizer::from_json(Json::array(), nullptr));
  EXPECT_FALSE(Tokenizer::load_dir("/nonexistent"));
}

}  // namespace
}  // namespace dss
