// Helpers of the grammar tests: a tiny byte vocabulary, the real DeepSeek vocabulary, and a
// seeded random walk of a matcher that stands in for a model.
#pragma once

#include <sys/wait.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/rng.h"
#include "grammar/compiled_grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"
#include "grammar/token_vocab.h"
#include "grammar/utf8_ranges.h"
#include "text/tokenizer.h"

namespace dss::grammar::test {

// Ids 0..255: the single bytes; 256..: `extra` multi-byte tokens; EOS last.
inline std::shared_ptr<const TokenVocab> byte_vocab(const std::vector<std::string>& extra = {}) {
  std::vector<std::pair<TokenId, std::string>> toks;
  for (int b = 0; b < 256; ++b) toks.emplace_back(b, std::string(1, static_cast<char>(b)));
  for (size_t i = 0; i < extra.size(); ++i)
    toks.emplace_back(256 + static_cast<TokenId>(i), extra[i]);
  const auto eos = static_cast<TokenId>(256 + extra.size());
  return std::make_shared<const TokenVocab>(std::move(toks), eos + 1, eos);
}

// The real tokenizer (scripts/setup installs it), loaded once per test binary; null if absent.
inline const Tokenizer* real_tokenizer() {
  static const Tokenizer* tok = []() -> const Tokenizer* {
    Result<Tokenizer> t = Tokenizer::load_dir(DSS_SOURCE_DIR "/third_party/tokenizer/deepseek-v3");
    return t ? new Tokenizer(std::move(t).value()) : nullptr;
  }();
  return tok;
}

// DeepSeek-V3's embedding rows: the mask covers all of them.
inline constexpr int32_t kDeepSeekVocab = 129280;

// Does the grammar accept exactly `text`?
inline bool accepts(CompiledGrammar& g, const std::string& text) {
  const int32_t s = g.advance_bytes(g.initial_state(), text);
  return s != Automaton::kDead && g.can_end(s);
}

inline std::vector<TokenId> allowed_ids(const std::vector<uint64_t>& words) {
  std::vector<TokenId> ids;
  for (size_t w = 0; w < words.size(); ++w) {
    for (uint64_t b = words[w]; b; b &= b - 1) {
      ids.push_back(static_cast<TokenId>(w * 64 + __builtin_ctzll(b)));
    }
  }
  return ids;
}

struct WalkResult {
  std::string text;             // bytes of the accepted tokens
  std::vector<TokenId> tokens;  // without EOS
  bool ended = false;           // EOS accepted
};

// A model stand-in: picks uniformly among the allowed tokens and takes EOS with probability
// `eos_prob` when allowed. After `soft_limit` tokens each step draws a preference, so documents
// stay short: tokens starting with '"', or with } ] ), or single-byte ASCII punctuation, or
// anything; an empty preference falls through to the next. Stops after hard_limit tokens.
inline WalkResult random_walk(GrammarMatcher& m, Rng& rng, int soft_limit = 24,
                              int hard_limit = 1500, float eos_prob = 0.5f) {
  const TokenVocab& v = m.grammar().vocab();
  std::vector<uint64_t> mask(v.n_words());
  WalkResult r;
  auto preferred = [](int tier, std::string_view b) {
    const auto c = static_cast<unsigned char>(b[0]);
    switch (tier) {
      case 0:
        return c == '"';
      case 1:
        return c == '}' || c == ']' || c == ')';
      case 2:
        return b.size() == 1 && c < 0x80 && std::ispunct(c) != 0;
      default:
        return true;
    }
  };
  std::vector<TokenId> pool;
  for (int step = 0; step < hard_limit; ++step) {
    m.fill_next_token_bitmask(mask);
    std::vector<TokenId> ids = allowed_ids(mask);
    if (ids.empty()) break;
    if (mask_test(mask, v.eos_id()) && (rng.uniform() < eos_prob || ids.size() == 1)) {
      if (!m.accept_token(v.eos_id()).is_ok()) break;
      r.ended = true;
      return r;
    }
    pool.clear();
    for (int tier = step >= soft_limit ? static_cast<int>(rng.next_u64() % 4) : 3;
         tier < 4 && pool.empty(); ++tier) {
      for (TokenId id : ids) {
        std::string_view b = v.bytes(id);
        if (!b.empty() && preferred(tier, b)) pool.push_back(id);  // empty: EOS
      }
    }
    if (pool.empty()) break;
    const TokenId t = pool[rng.next_u64() % pool.size()];
    if (!m.accept_token(t).is_ok()) break;
    r.tokens.push_back(t);
    r.text += v.bytes(t);
  }
  return r;
}

// Is `s` well-formed UTF-8?
inline bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    uint32_t c;
    if (!decode_utf8(s, i, c)) return false;
  }
  return true;
}

// Runs `cmd`, appending its stdout and stderr to `out`; returns the exit status.
inline int run_command(const std::string& cmd, std::string& out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int rc = pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace dss::grammar::test
