// Fuzz target: the grammar front ends and matcher (src/grammar, issue #38).
// Input: byte 0 picks the front end (JSON Schema with compact or no whitespace, regex, GBNF),
// byte 1 seeds the walk, the rest is the source text. A source that compiles gets a matcher
// over a small vocabulary (all single bytes but 0xFF, some multi-byte JSON/GBNF-shaped tokens,
// EOS) and a seeded walk of up to 48 tokens.
// Properties: no crash; an error has a message; the mask is exact (a token is accepted iff its
// bit is set: all tokens at the first step, 16 random ones at each later step); EOS is in the mask
// iff can_terminate(); must_terminate() leaves only EOS; rolling back restores every earlier mask
// bit for bit.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/rng.h"
#include "grammar/grammar_compiler.h"
#include "grammar/matcher.h"

namespace {

using dss::TokenId;
namespace g = dss::grammar;

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_grammar: property violated: %s\n", what);
    std::abort();
  }
}

const std::shared_ptr<const g::TokenVocab>& vocab() {
  static const std::shared_ptr<const g::TokenVocab> v = [] {
    std::vector<std::pair<TokenId, std::string>> toks;
    for (int b = 0; b < 255; ++b) toks.emplace_back(b, std::string(1, static_cast<char>(b)));
    const char* extra[] = {"{\"",  "\":",   "\": ",  ", \"", "\"}",  "\"]", "]}",   "},",
                           "true", "false", "null",  "12",   "00",   "-1",  ".5",   "e+",
                           "ab",   "abc",   "\\u00", "\\n",  "\\\"", "é",   "東京", "😀",
                           "::=",  " | ",   "[a-z]", "\n",   "  ",   "--",  "2026", ":00"};
    for (const char* e : extra) toks.emplace_back(static_cast<TokenId>(toks.size()), e);
    const auto eos = static_cast<TokenId>(toks.size());
    return std::make_shared<const g::TokenVocab>(std::move(toks), eos + 1, eos);
  }();
  return v;
}

bool bit(const std::vector<uint64_t>& m, TokenId id) { return (m[id / 64] >> (id % 64)) & 1; }

std::vector<TokenId> allowed(const std::vector<uint64_t>& m) {
  std::vector<TokenId> ids;
  for (size_t w = 0; w < m.size(); ++w) {
    for (uint64_t b = m[w]; b; b &= b - 1) {
      ids.push_back(static_cast<TokenId>(w * 64 + __builtin_ctzll(b)));
    }
  }
  return ids;
}

void walk(std::shared_ptr<g::CompiledGrammar> grammar, uint64_t seed) {
  const g::TokenVocab& v = *vocab();
  const TokenId eos = v.eos_id();
  g::GrammarMatcher m(std::move(grammar));
  dss::Rng rng(seed);
  std::vector<std::vector<uint64_t>> masks;
  std::vector<uint64_t> mask(v.n_words());
  for (int step = 0; step < 48; ++step) {
    m.fill_next_token_bitmask(mask);
    masks.push_back(mask);
    require(bit(mask, eos) == m.can_terminate(), "EOS bit != can_terminate()");
    const std::vector<TokenId> ids = allowed(mask);
    if (m.must_terminate())
      require(ids.size() == 1 && ids[0] == eos, "must_terminate: not EOS only");
    // The automaton accepts a token iff the mask allows it: every ordinary token at the first
    // step, 16 random ones at the others (a full check at every step ran at 19 inputs/s under
    // ASan, too slow for the 15 s smoke run).
    for (int k = 0; k < (step == 0 ? eos : 16); ++k) {
      const auto probe = static_cast<TokenId>(step == 0 ? k : rng.next_u64() % eos);
      const bool took = m.accept_token(probe).is_ok();
      require(took == bit(mask, probe), "mask bit != accept_token for a token");
      if (took) m.rollback(1);
    }
    if (ids.empty()) break;  // a dead end: the grammar needs bytes no token has
    const TokenId t = ids[rng.next_u64() % ids.size()];
    require(m.accept_token(t).is_ok(), "a token the mask allowed was refused");
    if (t == eos) {
      require(m.is_terminated(), "EOS accepted but not terminated");
      break;
    }
  }
  // Roll back one step at a time: every earlier mask comes back.
  while (m.n_accepted() > 0) {
    m.rollback(1);
    const auto k = static_cast<size_t>(m.n_accepted());
    require(k < masks.size(), "more accepted steps than recorded masks");
    m.fill_next_token_bitmask(mask);
    require(mask == masks[k], "rollback did not restore the mask");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string_view src(reinterpret_cast<const char*>(data + 2), size - 2);
  g::GrammarCompiler compiler(vocab(), 1);
  g::GrammarCompiler::Compiled c = [&] {
    switch (data[0] % 4) {
      case 0:
        return compiler.json_schema(src);
      case 1:
        return compiler.json_schema(src, {.whitespace = g::JsonWhitespace::kNone});
      case 2:
        return compiler.regex(src);
      default:
        return compiler.gbnf(src);
    }
  }();
  if (!c) {
    require(!c.message().empty(), "an error without a message");
    return 0;
  }
  walk(std::move(c).value(), data[1]);
  return 0;
}
