// Engine with structured output, in process, on the official-format tiny-v3 golden checkpoint
// (2,048 ids, EOS 1) and a hand-made vocabulary (id 2 + b is the single byte b, for the bytes
// listed): constrained greedy equals a reference that takes the argmax of the model's own logits
// over the allowed ids (computed here from the choice list, not by the grammar library);
// sampled outputs stay inside the grammar over many seeds and finish with kStop; a grammar that
// reaches a dead end fails its request alone with a clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/event_collector.h"
#include "grammar/grammar_compiler.h"
#include "model/runtime/sequence_runner.h"

namespace dss {
namespace {

const std::string kModel = std::string(DSS_TEST_DATA) + "/golden/tiny-v3";
constexpr int32_t kVocab = 2048;
constexpr TokenId kEos = 1;

EngineOptions opts() {
  EngineOptions o;
  o.model_dir = kModel;
  o.page_size = 16;
  o.max_running_requests = 16;
  o.chunked_prefill_size = 64;
  o.context_length = 512;
  o.debug_integrity = true;
  o.kv_cache_memory_bytes = 64 << 20;
  o.kv_cache_dtype = "f32";  // compared with an f32 single-sequence run
  return o;
}

TokenId id_of(char c) { return 2 + static_cast<unsigned char>(c); }

// Single-byte tokens for the printable ASCII bytes except those in `missing`.
std::shared_ptr<const grammar::TokenVocab> vocab(const std::string& missing = "") {
  std::vector<std::pair<TokenId, std::string>> toks;
  for (int b = 32; b < 127; ++b)
    if (missing.find(static_cast<char>(b)) == std::string::npos)
      toks.emplace_back(id_of(static_cast<char>(b)), std::string(1, static_cast<char>(b)));
  return std::make_shared<const grammar::TokenVocab>(std::move(toks), kVocab, kEos);
}

std::string text_of(const std::vector<TokenId>& ids) {
  std::string s;
  for (const TokenId t : ids) s += static_cast<char>(t - 2);
  return s;
}

std::vector<TokenId> prompt_of(int seed) {
  std::vector<TokenId> p;
  for (int i = 0; i < 12; ++i) p.push_back(static_cast<TokenId>((seed * 131 + i * 977) % kVocab));
  return p;
}

// Constrained greedy by hand: at each step the argmax of the model's logits over the ids that
// extend the text towards some choice (EOS once the text is a choice), first maximum.
std::vector<TokenId> reference_greedy(const Model& m, const std::vector<TokenId>& prompt,
                                      const std::vector<std::string>& choices) {
  SequenceRunner r(m, static_cast<int32_t>(prompt.size()) + 32, 64, 512);
  const float* logits = nullptr;
  r.prefill(prompt, false, [&](int32_t, int32_t, const float* lg) { logits = lg; });
  std::vector<float> last(logits, logits + kVocab);
  std::vector<TokenId> out;
  std::string text;
  for (;;) {
    std::vector<TokenId> allowed;
    for (const std::string& c : choices) {
      if (c.compare(0, text.size(), text) != 0) continue;
      allowed.push_back(c.size() == text.size() ? kEos : id_of(c[text.size()]));
    }
    std::sort(allowed.begin(), allowed.end());
    TokenId best = allowed[0];
    for (const TokenId t : allowed)
      if (last[static_cast<size_t>(t)] > last[static_cast<size_t>(best)]) best = t;
    if (best == kEos) return out;
    out.push_back(best);
    text += static_cast<char>(best - 2);
    // The engine stops as soon as nothing but EOS could follow.
    bool longer = false;
    for (const std::string& c : choices)
      longer |= c.size() > text.size() && c.compare(0, text.size(), text) == 0;
    if (!longer) return out;
    const float* lg = r.decode(best);
    last.assign(lg, lg + kVocab);
  }
}

TEST(EngineGrammar, GreedyIsTheArgmaxOverTheAllowedTokens) {
  auto m = Model::load(LoadOptions{kModel});
  ASSERT_TRUE(m.is_ok());
  auto e = Engine::create(opts());
  ASSERT_TRUE(e.is_ok()) << e.message();
  grammar::GrammarCompiler compiler(vocab());
  const std::vector<std::string> choices = {"a", "ab", "abc", "b", "bcd", "cat", "cow", "dog!"};
  auto g = compiler.choice(choices);
  ASSERT_TRUE(g.is_ok()) << g.message();
  EventCollector col;
  std::vector<std::pair<RequestId, int>> subs;
  for (int seed = 0; seed < 12; ++seed) {
    GenerateRequest r;
    r.prompt = prompt_of(seed);
    r.params.temperature = 0.0f;
    r.params.max_tokens = 16;
    r.grammar = *g;
    auto id = (*e)->submit(std::move(r), col.sink());
    ASSERT_TRUE(id.is_ok()) << id.message();
    subs.emplace_back(*id, seed);
  }
  col.wait_done(static_cast<int>(subs.size()));
  for (const auto& [id, seed] : subs) {
    const EventCollector::Output o = col.get(id);
    EXPECT_EQ(o.last.finish, FinishReason::kStop);
    const std::vector<TokenId> want = reference_greedy(**m, prompt_of(seed), choices);
    std::vector<TokenId> got = o.tokens;
    if (!got.empty() && got.back() == kEos) got.pop_back();
    EXPECT_EQ(got, want) << "seed " << seed << ": " << text_of(got) << " vs " << text_of(want);
  }
  EXPECT_GT((*e)->stats().grammar_masks, 0);
}

TEST(EngineGrammar, SampledOutputsStayInsideTheGrammar) {
  auto e = Engine::create(opts());
  ASSERT_TRUE(e.is_ok()) << e.message();
  grammar::GrammarCompiler compiler(vocab());
  auto g = compiler.regex("[a-c]{2,4}-[0-9]{1,3}");
  ASSERT_TRUE(g.is_ok());
  EventCollector col;
  std::vector<RequestId> ids;
  for (int seed = 0; seed < 24; ++seed) {
    GenerateRequest r;
    r.prompt = prompt_of(seed);
    r.params.temperature = seed % 2 ? 1.2f : 0.7f;
    r.params.top_k = seed % 3 == 0 ? 5 : 0;
    r.params.seed = static_cast<uint64_t>(seed);
    r.params.max_tokens = 32;
    r.grammar = *g;
    auto id = (*e)->submit(std::move(r), col.sink());
    ASSERT_TRUE(id.is_ok());
    ids.push_back(*id);
  }
  col.wait_done(static_cast<int>(ids.size()));
  for (const RequestId id : ids) {
    const EventCollector::Output o = col.get(id);
    EXPECT_EQ(o.last.finish, FinishReason::kStop);
    std::vector<TokenId> toks = o.tokens;
    if (!toks.empty() && toks.back() == kEos) toks.pop_back();
    const std::string s = text_of(toks);
    const size_t dash = s.find('-');
    ASSERT_NE(dash, std::string::npos) << s;
    EXPECT_TRUE(dash >= 2 && dash <= 4 && s.size() - dash - 1 >= 1 && s.size() - dash - 1 <= 3)
        << s;
    EXPECT_TRUE(std::all_of(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(dash), [](char c) {
      return c >= 'a' && c <= 'c';
    })) << s;
    EXPECT_TRUE(std::all_of(s.begin() + static_cast<std::ptrdiff_t>(dash) + 1, s.end(), [](char c) {
      return c >= '0' && c <= '9';
    })) << s;
  }
}

TEST(EngineGrammar, TriggerTokenStartsTheGrammar) {
  // Strict tools under tool_choice auto: free output until the trigger token, then the grammar.
  auto e = Engine::create(opts());
  ASSERT_TRUE(e.is_ok()) << e.message();
  grammar::GrammarCompiler compiler(vocab());
  auto digits = compiler.regex("[0-9]{3}");
  ASSERT_TRUE(digits.is_ok());
  EventCollector col;
  GenerateRequest r;
  r.prompt = prompt_of(3);
  r.params.temperature = 0.0f;
  r.params.max_tokens = 6;
  r.params.ignore_eos = true;
  auto free_id = (*e)->submit(r, col.sink());
  ASSERT_TRUE(free_id.is_ok());
  col.wait_done(1);
  const std::vector<TokenId> free = col.get(*free_id).tokens;
  ASSERT_EQ(free.size(), 6u);
  // The trigger: the first token that does not occur earlier, after the first.
  size_t k = 1;
  while (k < free.size() && std::find(free.begin(), free.begin() + k, free[k]) != free.begin() + k)
    ++k;
  ASSERT_LT(k, free.size());
  r.params.max_tokens = 16;
  r.params.ignore_eos = false;
  r.grammar = *digits;
  r.grammar_trigger_token = free[k];
  auto id = (*e)->submit(r, col.sink());
  ASSERT_TRUE(id.is_ok());
  col.wait_done(2);
  const EventCollector::Output o = col.get(*id);
  EXPECT_EQ(o.last.finish, FinishReason::kStop);
  ASSERT_GE(o.tokens.size(), k + 4);
  EXPECT_EQ(std::vector<TokenId>(o.tokens.begin(), o.tokens.begin() + k + 1),
            std::vector<TokenId>(free.begin(), free.begin() + k + 1));  // greedy, unconstrained
  std::vector<TokenId> rest(o.tokens.begin() + k + 1, o.tokens.end());
  if (!rest.empty() && rest.back() == kEos) rest.pop_back();
  const std::string s = text_of(rest);
  EXPECT_EQ(s.size(), 3u) << s;
  EXPECT_TRUE(std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) << s;
}

TEST(EngineGrammar, DeadEndFailsOnlyItsRequest) {
  auto e = Engine::create(opts());
  ASSERT_TRUE(e.is_ok()) << e.message();
  grammar::GrammarCompiler compiler(vocab("z"));  // no token holds 'z'
  auto dead = compiler.regex("az");
  auto fine = compiler.regex("a{3}");
  ASSERT_TRUE(dead.is_ok() && fine.is_ok());
  EventCollector col;
  GenerateRequest r;
  r.prompt = prompt_of(1);
  r.params.max_tokens = 8;
  r.grammar = *dead;
  auto bad = (*e)->submit(r, col.sink());
  r.grammar = *fine;
  auto good = (*e)->submit(r, col.sink());
  ASSERT_TRUE(bad.is_ok() && good.is_ok());
  col.wait_done(2);
  const EventCollector::Output b = col.get(*bad);
  EXPECT_EQ(b.last.finish, FinishReason::kError);
  EXPECT_EQ(b.last.error_kind, RequestError::kGrammarDeadEnd);
  EXPECT_NE(b.last.error.find("dead end"), std::string::npos) << b.last.error;
  EXPECT_EQ(b.tokens, std::vector<TokenId>{id_of('a')});
  const EventCollector::Output ok = col.get(*good);
  EXPECT_EQ(ok.last.finish, FinishReason::kStop);
  EXPECT_EQ(text_of(ok.tokens), "aaa");
  (*e)->check_integrity();
  const EngineStats s = (*e)->stats();
  EXPECT_EQ(s.kv_pages_used, s.kv_pages_cached);
}

TEST(EngineGrammar, RejectsAGrammarOfAnotherVocabulary) {
  auto e = Engine::create(opts());
  ASSERT_TRUE(e.is_ok());
  auto other = std::make_shared<const grammar::TokenVocab>(
      std::vector<std::pair<TokenId, std::string>>{{2, "a"}}, 4096, kEos);
  grammar::GrammarCompiler compiler(other);
  GenerateRequest r;
  r.prompt = prompt_of(0);
  r.grammar = *compiler.regex("a");
  EventCollector col;
  auto id = (*e)->submit(std::move(r), col.sink());
  ASSERT_FALSE(id.is_ok());
  EXPECT_NE(id.message().find("grammar"), std::string::npos) << id.message();
}

}  // namespace
}  // namespace dss
