// The fast mask (trie walk, per-stack cache, exact per-state cache) against brute force on the
// real DeepSeek vocabulary: at every step of several walks, token t is in the mask exactly when
// the automaton accepts t's bytes from the current state; added (special) tokens and ids past the
// tokenizer are never allowed; EOS is allowed exactly when the grammar can end.
#include <gtest/gtest.h>

#include "grammar/grammar_compiler.h"
#include "grammar_test_util.h"

namespace dss::grammar {
namespace {

// Returns the number of states checked.
int check_walks(GrammarCompiler& compiler, const std::shared_ptr<CompiledGrammar>& g,
                const Tokenizer& tok, int n_walks, int stride) {
  int n_checked = 0;
  const TokenVocab& v = *compiler.vocab();
  std::vector<uint64_t> mask(v.n_words());
  for (int seed = 0; seed < n_walks; ++seed) {
    GrammarMatcher m(g);
    Rng rng(5 + seed);
    test::WalkResult w = test::random_walk(m, rng, 40);
    // Replay the walk, checking every stride-th state by brute force.
    GrammarMatcher r(g);
    for (size_t i = 0; i <= w.tokens.size(); ++i) {
      if (i % stride == 0) {
        r.fill_next_token_bitmask(mask);
        std::string prefix;
        for (size_t k = 0; k < i; ++k) prefix += v.bytes(w.tokens[k]);
        const int32_t s = g->advance_bytes(g->initial_state(), prefix);
        EXPECT_NE(s, Automaton::kDead);
        ++n_checked;
        for (TokenId id = 0; id < v.n_vocab(); ++id) {
          bool want;
          if (id == v.eos_id()) {
            want = g->can_end(s);
          } else if (id >= tok.n_ids() || tok.is_added(id)) {
            want = false;
          } else {
            want = g->advance_token(s, id) != Automaton::kDead;
          }
          if (mask_test(mask, id) != want) {
            ADD_FAILURE() << "step " << i << " token " << id << " '" << v.bytes(id) << "' after '"
                          << prefix << "': mask " << mask_test(mask, id);
            return n_checked;
          }
        }
      }
      if (i < w.tokens.size()) {
        EXPECT_TRUE(r.accept_token(w.tokens[i]).is_ok());
      }
    }
    // Rollback: stepping back one token at a time gives back every earlier mask exactly.
    std::vector<std::vector<uint64_t>> masks;
    GrammarMatcher f(g);
    for (TokenId t : w.tokens) {
      f.fill_next_token_bitmask(mask);
      masks.push_back(mask);
      EXPECT_TRUE(f.accept_token(t).is_ok());
    }
    std::vector<uint64_t> again(v.n_words());
    for (size_t k = masks.size(); k-- > 0;) {
      f.rollback(1);
      f.fill_next_token_bitmask(again);
      EXPECT_TRUE(again == masks[k]) << "rollback to step " << k;
    }
  }
  return n_checked;
}

TEST(MaskConsistency, FastMaskEqualsBruteForce) {
  const Tokenizer* tok = test::real_tokenizer();
  if (!tok) GTEST_SKIP() << "no tokenizer in third_party/tokenizer (run scripts/setup)";
  // A shallow stack depth forces the uncertain-token path (truncated stacks) as well.
  for (int32_t depth : {8, 2}) {
    CompileOptions opts;
    opts.stack_depth = depth;
    GrammarCompiler compiler(TokenVocab::from_tokenizer(*tok, test::kDeepSeekVocab), 16, opts);
    auto schema = compiler.json_schema(R"({"type":"object","properties":{"name":{"type":"string",
        "maxLength":10},"tags":{"type":"array","items":{"type":"string"},"maxItems":3},
        "n":{"type":"integer","minimum":-20,"maximum":300}},"required":["name","n"]})");
    ASSERT_TRUE(schema.is_ok()) << schema.message();
    EXPECT_GE(check_walks(compiler, *schema, *tok, 3, 3), 15);
    auto any = compiler.json_object();
    ASSERT_TRUE(any.is_ok());
    EXPECT_GE(check_walks(compiler, *any, *tok, 4, 4), 10);
    auto re = compiler.regex("[a-z]{1,6}( [0-9]+)?");
    ASSERT_TRUE(re.is_ok());
    EXPECT_GE(check_walks(compiler, *re, *tok, 3, 1), 6);
  }
}

TEST(MaskConsistency, SpecialTokensNeverAllowed) {
  const Tokenizer* tok = test::real_tokenizer();
  if (!tok) GTEST_SKIP() << "no tokenizer";
  GrammarCompiler compiler(TokenVocab::from_tokenizer(*tok, test::kDeepSeekVocab));
  auto g = compiler.json_object();
  ASSERT_TRUE(g.is_ok());
  GrammarMatcher m(*g);
  std::vector<uint64_t> mask(compiler.vocab()->n_words());
  m.fill_next_token_bitmask(mask);
  for (const AddedToken& a : tok->added_tokens().all())
    EXPECT_FALSE(mask_test(mask, a.id)) << a.content;
  EXPECT_FALSE(mask_test(mask, tok->eos_id()));
  for (TokenId id = tok->n_ids(); id < test::kDeepSeekVocab; ++id)
    EXPECT_FALSE(mask_test(mask, id));
  // Known-invalid first tokens of an object: whitespace, '[', a quote, a digit.
  for (const char* bad : {" {", "\n", "[", "\"", "1"}) {
    std::vector<TokenId> ids = tok->encode(bad);
    ASSERT_EQ(ids.size(), 1u) << bad;
    EXPECT_FALSE(mask_test(mask, ids[0])) << bad;
  }
  std::vector<TokenId> brace = tok->encode("{");
  ASSERT_EQ(brace.size(), 1u);
  EXPECT_TRUE(mask_test(mask, brace[0]));
}

}  // namespace
}  // namespace dss::grammar
