// RequestGrammar (the engine's per-request structured-output state) on a byte vocabulary: masks
// and termination follow the matcher; in thinking mode the grammar waits for the end of the
// reasoning section, given as a token or as text split across tokens.
#include "engine/request_grammar.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "grammar/grammar_compiler.h"
#include "tests/grammar/grammar_test_util.h"

namespace dss {
namespace {

using grammar::test::allowed_ids;
using grammar::test::byte_vocab;

// Ids: 0..255 bytes, 256 "</think>", 257 "k>{", 258 EOS.
constexpr TokenId kThinkEnd = 256, kTailBrace = 257, kEos = 258;

struct Fixture {
  grammar::GrammarCompiler compiler{byte_vocab({"</think>", "k>{"})};
  std::vector<uint64_t> words = std::vector<uint64_t>(compiler.vocab()->n_words());
};

TEST(RequestGrammar, MaskAcceptAndDone) {
  Fixture f;
  RequestGrammar g(*f.compiler.regex("ab|a"), -1, "");
  EXPECT_FALSE(g.gated());
  ASSERT_TRUE(g.fill_mask(f.words));
  EXPECT_EQ(allowed_ids(f.words), std::vector<TokenId>{'a'});
  ASSERT_TRUE(g.accept('a'));
  EXPECT_FALSE(g.done());  // "a" may end or go on with "b"
  ASSERT_TRUE(g.fill_mask(f.words));
  EXPECT_EQ(allowed_ids(f.words), (std::vector<TokenId>{'b', kEos}));
  EXPECT_FALSE(g.accept('c'));  // refused: the caller fails the request
  ASSERT_TRUE(g.accept('b'));
  EXPECT_TRUE(g.done());  // nothing but EOS can follow "ab": finish now
}

TEST(RequestGrammar, EosEndsTheGrammar) {
  Fixture f;
  RequestGrammar g(*f.compiler.regex("a+"), -1, "");
  ASSERT_TRUE(g.accept('a'));
  EXPECT_FALSE(g.done());
  ASSERT_TRUE(g.accept(kEos));
  EXPECT_TRUE(g.done());
  EXPECT_FALSE(g.fill_mask(f.words));  // terminated: nothing more is allowed
}

TEST(RequestGrammar, GatedUntilTheReasoningEndToken) {
  Fixture f;
  RequestGrammar g(*f.compiler.json_object(), kThinkEnd, "</think>");
  ASSERT_TRUE(g.gated());
  ASSERT_TRUE(g.fill_mask(f.words));
  const std::vector<TokenId> all = allowed_ids(f.words);
  EXPECT_EQ(all.size(), 258u);  // every id but EOS
  EXPECT_EQ(all.back(), kTailBrace);
  for (const char c : std::string("free text, not JSON")) ASSERT_TRUE(g.accept(c));
  EXPECT_TRUE(g.gated());
  ASSERT_TRUE(g.accept(kThinkEnd));
  EXPECT_FALSE(g.gated());
  ASSERT_TRUE(g.fill_mask(f.words));
  EXPECT_EQ(allowed_ids(f.words), std::vector<TokenId>{'{'});
}

TEST(RequestGrammar, GateOpensOnTheTextAcrossTokensAndKeepsTheRest) {
  Fixture f;
  RequestGrammar g(*f.compiler.json_object(), -1, "</think>");
  for (const char c : std::string("x</thin")) ASSERT_TRUE(g.accept(c));
  EXPECT_TRUE(g.gated());
  ASSERT_TRUE(g.accept(kTailBrace));  // "k>{": the marker ends, "{" opens the object
  EXPECT_FALSE(g.gated());
  ASSERT_TRUE(g.fill_mask(f.words));
  const std::vector<TokenId> next = allowed_ids(f.words);
  EXPECT_TRUE(std::find(next.begin(), next.end(), '}') != next.end());
  EXPECT_TRUE(std::find(next.begin(), next.end(), '{') == next.end());
  ASSERT_TRUE(g.accept('}'));
  EXPECT_TRUE(g.done());
}

TEST(RequestGrammar, BytesAfterTheMarkerThatTheGrammarRefusesAreAnError) {
  Fixture f;
  RequestGrammar g(*f.compiler.regex("[0-9]+"), -1, "</think>");
  for (const char c : std::string("</thin")) ASSERT_TRUE(g.accept(c));
  EXPECT_FALSE(g.accept(kTailBrace));  // "{" is not a digit
}

TEST(RequestGrammar, TwoGatesInOrderTheSecondLettingTheReplyEnd) {
  // Thinking mode with a strict tool under tool_choice auto: reasoning, then free text, then the
  // call-block marker ("<c>" here) starts the grammar.
  Fixture f;
  RequestGrammar g(*f.compiler.regex("[0-9]+"),
                   {{kThinkEnd, "</think>", false}, {-1, "<c>", true}});
  ASSERT_TRUE(g.fill_mask(f.words));
  EXPECT_EQ(allowed_ids(f.words).size(), 258u);                      // reasoning: every id but EOS
  for (const char c : std::string("<c>")) ASSERT_TRUE(g.accept(c));  // inside reasoning: no effect
  ASSERT_TRUE(g.accept(kThinkEnd));
  EXPECT_TRUE(g.gated());
  ASSERT_TRUE(g.fill_mask(f.words));
  EXPECT_EQ(allowed_ids(f.words).size(), 259u);  // free text: EOS too (the reply may end here)
  for (const char c : std::string("text <c")) ASSERT_TRUE(g.accept(c));
  EXPECT_TRUE(g.gated());
  ASSERT_TRUE(g.accept('>'));
  EXPECT_FALSE(g.gated());
  ASSERT_TRUE(g.fill_mask(f.words));
  EXPECT_EQ(allowed_ids(f.words).size(), 10u);  // the grammar: digits only
  EXPECT_FALSE(g.accept('x'));
}

TEST(RequestGrammar, OneTokenCanOpenTwoTextGatesAndFeedTheGrammar) {
  Fixture f;
  // "k>{" ends "</think>", and with "{" as the second gate's marker the grammar starts after it.
  RequestGrammar g(*f.compiler.regex("[a-z]+"), {{-1, "</think>", false}, {-1, "{", true}});
  for (const char c : std::string("</thin")) ASSERT_TRUE(g.accept(c));
  ASSERT_TRUE(g.accept(kTailBrace));
  EXPECT_FALSE(g.gated());
  ASSERT_TRUE(g.fill_mask(f.words));
  EXPECT_EQ(allowed_ids(f.words).size(), 26u);
}

}  // namespace
}  // namespace dss
