// The grammar engine on a tiny byte vocabulary: IR lowering, UTF-8 ranges, integer ranges,
// regex / GBNF / JSON Schema front ends (languages and errors), masks, rollback, the cache.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "grammar/bnf.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_compiler.h"
#include "grammar/int_range.h"
#include "grammar/json_schema.h"
#include "grammar/regex_parser.h"
#include "grammar/utf8_ranges.h"
#include "grammar_test_util.h"

namespace dss::grammar {
namespace {

using test::accepts;
using test::byte_vocab;

std::shared_ptr<CompiledGrammar> compile_ir(const GrammarIr& ir) {
  GrammarCompiler c(byte_vocab());
  auto g = c.from_ir(ir);
  EXPECT_TRUE(g.is_ok()) << g.message();
  return *g;
}

std::shared_ptr<CompiledGrammar> regex(const std::string& p) {
  static GrammarCompiler c(byte_vocab());
  auto g = c.regex(p);
  EXPECT_TRUE(g.is_ok()) << p << ": " << g.message();
  return *g;
}

std::shared_ptr<CompiledGrammar> schema(const std::string& s) {
  static GrammarCompiler c(byte_vocab({"{\"", "\":", "\"}", "ab", "abc"}));
  auto g = c.json_schema(s);
  EXPECT_TRUE(g.is_ok()) << s << ": " << g.message();
  return *g;
}

std::string schema_error(const std::string& s) {
  GrammarCompiler c(byte_vocab());
  auto g = c.json_schema(s);
  EXPECT_FALSE(g.is_ok()) << s;
  return g.is_ok() ? "" : g.message();
}

TEST(Grammar, Utf8RangesMatchExactlyTheirCodepoints) {
  CodepointSet set;
  set.add(0x41, 0x5A);
  set.add(0x3B1, 0x3C9);
  set.add(0xD7F0, 0xE010);  // straddles the surrogates
  set.add(0x1F600, 0x1F64F);
  GrammarIr ir;
  ir.root = ir.rule_id("root");
  ir.define(ir.root, utf8_expr(set));
  auto g = compile_ir(ir);
  for (uint32_t c : {0x40u, 0x41u, 0x5Au, 0x5Bu, 0x3B0u, 0x3B1u, 0x3C9u, 0x3CAu, 0xD7EFu, 0xD7F0u,
                     0xD7FFu, 0xE000u, 0xE010u, 0xE011u, 0x1F5FFu, 0x1F600u, 0x1F64Fu, 0x1F650u}) {
    std::string s;
    append_utf8(c, s);
    EXPECT_EQ(accepts(*g, s), set.contains(c)) << std::hex << c;
  }
  EXPECT_FALSE(accepts(*g, "\xED\xA0\x80"));  // an encoded surrogate
  EXPECT_FALSE(accepts(*g, "AB"));
}

TEST(Grammar, IntRangeMatchesExactlyTheRange) {
  const std::pair<int64_t, int64_t> ranges[] = {{0, 0},   {-5, 5},    {7, 123},    {-123, -7},
                                                {10, 99}, {100, 100}, {-1000, 37}, {19, 2301}};
  for (auto [lo, hi] : ranges) {
    GrammarIr ir;
    ir.root = ir.rule_id("root");
    ir.define(ir.root, int_range_expr(lo, hi));
    auto g = compile_ir(ir);
    for (int64_t v = lo - 150; v <= hi + 150; ++v) {
      EXPECT_EQ(accepts(*g, std::to_string(v)), v >= lo && v <= hi)
          << lo << ".." << hi << ": " << v;
    }
    EXPECT_FALSE(accepts(*g, "-0"));
    EXPECT_FALSE(accepts(*g, "007"));
    EXPECT_FALSE(accepts(*g, "+7"));
  }
}

TEST(Grammar, RegexLanguage) {
  auto g = regex("^(ab|c)*d{2,3}[x-z]?$");
  EXPECT_TRUE(accepts(*g, "dd"));
  EXPECT_TRUE(accepts(*g, "abcabddd"));
  EXPECT_TRUE(accepts(*g, "cddy"));
  EXPECT_FALSE(accepts(*g, "d"));
  EXPECT_FALSE(accepts(*g, "ddddd"));
  EXPECT_FALSE(accepts(*g, "abdda"));
  auto e = regex("\\d+\\.\\d{2}|\\(\\w\\s\\)");
  EXPECT_TRUE(accepts(*e, "12.50"));
  EXPECT_TRUE(accepts(*e, "(_ )"));
  EXPECT_FALSE(accepts(*e, "1.5"));
  auto dot = regex("a.c");
  EXPECT_TRUE(accepts(*dot,
                      "a\xC3\xA9"
                      "c"));
  EXPECT_FALSE(accepts(*dot, "a\nc"));
  auto neg = regex("[^a-c\\d]+");
  EXPECT_TRUE(accepts(*neg, "xyz\xE2\x82\xAC"));
  EXPECT_FALSE(accepts(*neg, "xa"));
  EXPECT_FALSE(accepts(*neg, "x1"));
}

TEST(Grammar, RegexErrorsNameTheConstruct) {
  GrammarCompiler c(byte_vocab());
  const std::pair<const char*, const char*> cases[] = {
      {"(a)\\1", "backreference"}, {"(?=a)", "lookaround"},   {"a\\bb", "word boundary"},
      {"a{3,1}", "n < m"},         {"(ab", "missing ')'"},    {"*a", "nothing to repeat"},
      {"a^b", "anchor"},           {"[z-a]", "out of order"}, {"a{2000}", "repetition bound"}};
  for (auto [p, want] : cases) {
    auto g = c.regex(p);
    ASSERT_FALSE(g.is_ok()) << p;
    EXPECT_NE(g.message().find(want), std::string::npos) << p << ": " << g.message();
  }
}

// Found by fuzz_grammar: 8,000 nested '(' overflowed the stack of the compiling thread (a 20 KB
// request with such a `regex` brought the server down). Nesting is now limited to 256 levels.
TEST(Grammar, GbnfRuleCountIsBounded) {
  GrammarCompiler c(byte_vocab());
  // A chain of non-tail references, the shape whose compile time grows fastest.
  auto chain = [](int n) {
    std::ostringstream g;
    g << "root ::= r0\n";
    for (int k = 0; k < n; ++k) g << 'r' << k << " ::= r" << k + 1 << " \"b\"\n";
    g << 'r' << n << " ::= \"a\"\n";
    return g.str();
  };
  auto ok = c.gbnf(chain(kMaxGbnfRules - 2));  // root + chain + the last: kMaxGbnfRules rules
  ASSERT_TRUE(ok.is_ok()) << ok.message();
  EXPECT_TRUE(accepts(**ok, "a" + std::string(kMaxGbnfRules - 2, 'b')));
  auto bad = c.gbnf(chain(kMaxGbnfRules - 1));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("more than 4096 rules"), std::string::npos) << bad.message();
}

TEST(Grammar, DeepNestingIsAnErrorNotAStackOverflow) {
  GrammarCompiler c(byte_vocab());
  auto nested = [](int n, const char* open, const char* mid, const char* close) {
    std::string s;
    for (int k = 0; k < n; ++k) s += open;
    s += mid;
    for (int k = 0; k < n; ++k) s += close;
    return s;
  };
  auto re = c.regex(nested(kMaxRegexDepth, "(", "a", ")"));
  ASSERT_TRUE(re.is_ok()) << re.message();
  EXPECT_TRUE(accepts(**re, "a"));
  auto gb = c.gbnf("root ::= " + nested(kMaxGbnfDepth, "(", "\"a\"", ")") + "\n");
  ASSERT_TRUE(gb.is_ok()) << gb.message();
  EXPECT_TRUE(accepts(**gb, "a"));
  for (int n : {kMaxRegexDepth + 1, 100000}) {
    auto r = c.regex(nested(n, "(?:", "a", ")"));
    ASSERT_FALSE(r.is_ok()) << n;
    EXPECT_NE(r.message().find("nested deeper than 256"), std::string::npos) << r.message();
    EXPECT_FALSE(c.regex(std::string(n, '(')).is_ok()) << n;
    auto g = c.gbnf("root ::= " + std::string(n, '('));
    ASSERT_FALSE(g.is_ok()) << n;
    EXPECT_NE(g.message().find("nested deeper than 256"), std::string::npos) << g.message();
    // A JSON Schema pattern goes through the same regex parser.
    const std::string schema = R"({"type": "string", "pattern": ")" + std::string(n, '(') + "\"}";
    auto j = c.json_schema(schema);
    ASSERT_FALSE(j.is_ok()) << n;
    EXPECT_NE(j.message().find("nested deeper than 256"), std::string::npos) << j.message();
  }
}

TEST(Grammar, GbnfLanguageAndErrors) {
  GrammarCompiler c(byte_vocab());
  auto g = c.gbnf(R"(# a list of numbers
root ::= "[" ( num ( "," " "? num )* )? "]"
num  ::= "-"? [0-9]+ | # comment
  "nan"
)");
  ASSERT_TRUE(g.is_ok()) << g.message();
  EXPECT_TRUE(accepts(**g, "[]"));
  EXPECT_TRUE(accepts(**g, "[1, -23,nan]"));
  EXPECT_FALSE(accepts(**g, "[1,,2]"));
  EXPECT_FALSE(accepts(**g, "[1"));
  auto rep = c.gbnf("root ::= [a-c]{2,3} \"\\x41\" [^\\n]?\n");
  ASSERT_TRUE(rep.is_ok()) << rep.message();
  EXPECT_TRUE(accepts(**rep, "abA"));
  EXPECT_TRUE(accepts(**rep, "abcA\xCE\xB1"));
  EXPECT_FALSE(accepts(**rep, "aA"));
  const std::pair<const char*, const char*> cases[] = {
      {"root ::= valu\nvalue ::= \"x\"\n", "undefined rule 'valu'"},
      {"expr ::= expr \"+\" \"1\" | \"1\"\nroot ::= expr\n", "left-recursive"},
      {"start ::= \"x\"\n", "no rule named 'root'"},
      {"root ::= \"x\n", "newline in a literal"},
      {"root ::= <think>\n", "token references"},
      {"root ::= \"a\"\nroot ::= \"b\"\n", "defined twice"}};
  for (auto [text, want] : cases) {
    auto e = c.gbnf(text);
    ASSERT_FALSE(e.is_ok()) << text;
    EXPECT_NE(e.message().find(want), std::string::npos) << text << ": " << e.message();
  }
}

TEST(Grammar, NullableRepetitionTerminates) {
  auto g = regex("(a?)*b(c*)*");
  EXPECT_TRUE(accepts(*g, "b"));
  EXPECT_TRUE(accepts(*g, "aaabcc"));
  EXPECT_FALSE(accepts(*g, "aacb"));
}

TEST(Grammar, JsonSchemaObjects) {
  auto g = schema(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string",
      "maxLength":2},"c":{"type":"boolean"}},"required":["a","c"]})");
  EXPECT_TRUE(accepts(*g, R"({"a":1,"c":true})"));
  EXPECT_TRUE(accepts(*g, R"({"a": -3, "b": "x\n", "c": false})"));
  EXPECT_FALSE(accepts(*g, R"({"c":true,"a":1})"));            // declared order
  EXPECT_FALSE(accepts(*g, R"({"a":1})"));                     // c required
  EXPECT_FALSE(accepts(*g, R"({"a":1,"b":"xyz","c":true})"));  // maxLength
  EXPECT_FALSE(accepts(*g, R"({"a":1,"c":true,"d":1})"));      // no additional properties
  EXPECT_FALSE(accepts(*g, R"({"a":1,  "c":true})"));          // at most one space
  EXPECT_FALSE(accepts(*g, "{\"a\":1,\n\"c\":true}"));         // no newlines
  auto extra = schema(R"({"type":"object","properties":{"ab":{"type":"null"}},
      "additionalProperties":{"type":"integer"}})");
  EXPECT_TRUE(accepts(*extra, R"({"ab":null,"x":1,"a":2,"abc":3})"));
  EXPECT_TRUE(accepts(*extra, R"({"":1})"));
  EXPECT_FALSE(accepts(*extra, R"({"x":1,"ab":2})"));  // a declared key is not an extra key
  EXPECT_FALSE(accepts(*extra, R"({"ab":null,"ab":1})"));
}

TEST(Grammar, JsonSchemaArraysEnumsRefs) {
  auto arr = schema(R"({"type":"array","prefixItems":[{"const":"x"},{"type":"integer"}],
      "items":{"enum":[1,"two",null]},"minItems":1,"maxItems":4})");
  EXPECT_TRUE(accepts(*arr, R"(["x"])"));
  EXPECT_TRUE(accepts(*arr, R"(["x", 5, "two", null])"));
  EXPECT_FALSE(accepts(*arr, R"([])"));
  EXPECT_FALSE(accepts(*arr, R"(["x",5,1,1,1])"));
  EXPECT_FALSE(accepts(*arr, R"(["y"])"));
  auto rec = schema(R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object",
      "properties":{"v":{"type":"integer","minimum":0,"maximum":9},"kids":{"type":"array",
      "items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["v"]}}})");
  EXPECT_TRUE(accepts(*rec, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]})"));
  EXPECT_FALSE(accepts(*rec, R"({"v":10})"));
  auto any = schema(R"({"anyOf":[{"type":"string","format":"date"},{"type":"null"}]})");
  EXPECT_TRUE(accepts(*any, R"("2024-02-29")"));
  EXPECT_FALSE(accepts(*any, R"("2023-02-29")"));
  EXPECT_FALSE(accepts(*any, R"("2023-04-31")"));
  EXPECT_TRUE(accepts(*any, "null"));
  auto pat = schema(R"({"type":"string","pattern":"^a\"b$"})");
  EXPECT_TRUE(accepts(*pat, R"("a\"b")"));
  auto unanchored = schema(R"({"type":"string","pattern":"x+"})");
  EXPECT_TRUE(accepts(*unanchored, R"("abxxc")"));
  EXPECT_FALSE(accepts(*unanchored, R"("abc")"));
}

TEST(Grammar, JsonSchemaUnsupportedKeywordsAreNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type":"object","patternProperties":{}})", "'patternProperties'"},
      {R"({"not":{"type":"string"}})", "'not'"},
      {R"({"type":"number","multipleOf":2})", "'multipleOf'"},
      {R"({"type":"string","format":"ipv4"})", "format 'ipv4'"},
      {R"({"if":{},"then":{}})", "'if'"},
      {R"({"type":"array","uniqueItems":true})", "'uniqueItems'"},
      {R"({"type":"object","properties":{"a":{"type":"object","minProperties":1}}})",
       "#/properties/a: unsupported keyword 'minProperties'"},
      {R"({"type":"number","minimum":1.5})", "'minimum' is supported for integers only"},
      {R"({"$ref":"#/$defs/missing"})", "unresolved reference"},
      {R"({"type":"string","pattern":"(a)\\1"})", "backreference"},
      {R"({"type":"object","required":["x"]})", "'x' is not in properties"},
      {R"({"type":"strin"})", "unknown type 'strin'"},
      {R"({"type":"object")", "not valid JSON"}};
  for (auto [s, want] : cases) {
    const std::string msg = schema_error(s);
    EXPECT_NE(msg.find(want), std::string::npos) << s << ": " << msg;
  }
}

TEST(Grammar, MaskAllowsExactlyTheContinuations) {
  auto vocab = byte_vocab({"{\"", "\":", "\"}", "ab", "abc", "b\""});
  GrammarCompiler c(vocab);
  auto g = c.json_schema(R"({"type":"object","properties":{"ab":{"enum":["b","c"]}},
      "required":["ab"]})");
  ASSERT_TRUE(g.is_ok()) << g.message();
  GrammarMatcher m(*g);
  std::vector<uint64_t> mask(vocab->n_words());
  m.fill_next_token_bitmask(mask);
  EXPECT_EQ(test::allowed_ids(mask), (std::vector<TokenId>{'{', 256}));
  ASSERT_TRUE(m.accept_token(256).is_ok());  // {"
  m.fill_next_token_bitmask(mask);
  EXPECT_EQ(test::allowed_ids(mask), (std::vector<TokenId>{'a', 259}));  // "a", "ab"; not "abc"
  EXPECT_FALSE(m.accept_token(260).is_ok());
  ASSERT_TRUE(m.accept_bytes("ab\":").is_ok());
  m.fill_next_token_bitmask(mask);
  EXPECT_EQ(test::allowed_ids(mask), (std::vector<TokenId>{' ', '"'}));
  ASSERT_TRUE(m.accept_token('"').is_ok());
  m.fill_next_token_bitmask(mask);
  EXPECT_EQ(test::allowed_ids(mask), (std::vector<TokenId>{'b', 'c', 261}));
  ASSERT_TRUE(m.accept_token(261).is_ok());  // b"
  EXPECT_FALSE(m.can_terminate());
  ASSERT_TRUE(m.accept_token('}').is_ok());
  EXPECT_TRUE(m.must_terminate());
  m.fill_next_token_bitmask(mask);
  EXPECT_EQ(test::allowed_ids(mask), (std::vector<TokenId>{vocab->eos_id()}));
  ASSERT_TRUE(m.accept_token(vocab->eos_id()).is_ok());
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.accept_token('x').is_ok());
}

TEST(Grammar, RollbackRestoresTheMask) {
  auto vocab = byte_vocab({"ab", "abc"});
  GrammarCompiler c(vocab);
  auto g = c.regex("(ab|c)*x");
  ASSERT_TRUE(g.is_ok());
  GrammarMatcher m(*g);
  std::vector<std::vector<uint64_t>> masks;
  std::vector<uint64_t> mask(vocab->n_words());
  for (TokenId t : std::vector<TokenId>{256, 'c', 'a', 'b', 'x'}) {
    m.fill_next_token_bitmask(mask);
    masks.push_back(mask);
    ASSERT_TRUE(m.accept_token(t).is_ok()) << t;
  }
  ASSERT_TRUE(m.accept_token(vocab->eos_id()).is_ok());
  m.rollback(1);
  EXPECT_FALSE(m.is_terminated());
  for (int k = 4; k >= 0; --k) {
    m.rollback(1);
    m.fill_next_token_bitmask(mask);
    EXPECT_EQ(mask, masks[k]) << k;
  }
  EXPECT_EQ(m.n_accepted(), 0);
}

TEST(Grammar, WhitespaceNoneAllowsNoSpaces) {
  GrammarCompiler c(byte_vocab());
  JsonSchemaOptions opts;
  opts.whitespace = JsonWhitespace::kNone;
  auto g = c.json_schema(R"({"type":"object","properties":{"a":{"type":"array",
      "items":{"type":"integer"}}},"required":["a"]})",
                         opts);
  ASSERT_TRUE(g.is_ok()) << g.message();
  EXPECT_TRUE(accepts(**g, R"({"a":[1,2]})"));
  EXPECT_FALSE(accepts(**g, R"({"a": [1,2]})"));
  EXPECT_FALSE(accepts(**g, R"({"a":[1, 2]})"));
  auto compact = c.json_schema(R"({"type":"object","properties":{"a":{"type":"array",
      "items":{"type":"integer"}}},"required":["a"]})");
  ASSERT_TRUE(compact.is_ok());
  EXPECT_NE(compact->get(), g->get());  // the policy is part of the cache key
  EXPECT_TRUE(accepts(**compact, R"({"a": [1, 2]})"));
}

TEST(Grammar, ConcurrentMatchersShareOneGrammar) {
  auto vocab = byte_vocab({"ab", "\"}", "{\""});
  GrammarCompiler c(vocab);
  auto g = c.json_object();
  ASSERT_TRUE(g.is_ok());
  auto run = [&](uint64_t seed) {
    GrammarMatcher m(*g);
    Rng rng(seed);
    return test::random_walk(m, rng, 30).text;
  };
  std::vector<std::string> want;
  for (uint64_t s = 0; s < 8; ++s) want.push_back(run(s));
  // Fresh grammar, same walks from two threads at once: same documents.
  GrammarCompiler c2(vocab);
  g = c2.json_object();
  std::vector<std::string> got(8);
  std::thread t1([&] {
    for (uint64_t s = 0; s < 8; s += 2) got[s] = run(s);
  });
  std::thread t2([&] {
    for (uint64_t s = 1; s < 8; s += 2) got[s] = run(s);
  });
  t1.join();
  t2.join();
  EXPECT_EQ(got, want);
}

TEST(Grammar, CompilerCachesBySource) {
  GrammarCompiler c(byte_vocab(), 2);
  auto a = c.regex("a+");
  auto b = c.regex("a+");
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->get(), b->get());
  (void)c.regex("b+");
  (void)c.regex("c+");
  EXPECT_EQ(c.n_cached(), 2);
  auto again = c.regex("a+");
  EXPECT_NE(again->get(), a->get());  // evicted, rebuilt
  const std::string choices[] = {"yes", "no"};
  auto ch = c.choice(choices);
  ASSERT_TRUE(ch.is_ok());
  EXPECT_TRUE(accepts(**ch, "no"));
  EXPECT_FALSE(accepts(**ch, "n"));
}

}  // namespace
}  // namespace dss::grammar
