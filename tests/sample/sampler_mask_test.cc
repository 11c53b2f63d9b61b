// Sampler with an allowed-token mask (structured output): the mask comes before everything else,
// so greedy picks the best allowed token, sampling never yields a disallowed one, and the
// truncations (top-k, top-p, min-p) and penalties act among the allowed tokens. References are
// computed independently here: full sorts and a double-precision softmax over the allowed set.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/rng.h"
#include "sample/sampler.h"

namespace dss {
namespace {

constexpr TokenId kNoEos = -1;

std::vector<uint64_t> mask_of(const std::vector<bool>& allowed) {
  std::vector<uint64_t> w((allowed.size() + 63) / 64, 0);
  for (size_t t = 0; t < allowed.size(); ++t)
    if (allowed[t]) w[t / 64] |= uint64_t{1} << (t % 64);
  return w;
}

// A random mask allowing about `frac` of n tokens (at least one).
std::vector<bool> random_allowed(Rng& rng, int32_t n, double frac) {
  std::vector<bool> a(static_cast<size_t>(n));
  bool any = false;
  for (size_t t = 0; t < a.size(); ++t) any |= (a[t] = rng.uniform_double() < frac);
  if (!any) a[rng.next_u64() % a.size()] = true;
  return a;
}

std::vector<float> random_logits(Rng& rng, int32_t n, float scale) {
  std::vector<float> l(static_cast<size_t>(n));
  for (float& x : l) x = scale * rng.normal();
  return l;
}

// The first allowed token of maximal logit.
TokenId reference_argmax(const std::vector<float>& l, const std::vector<bool>& allowed) {
  TokenId best = -1;
  for (size_t t = 0; t < l.size(); ++t)
    if (allowed[t] && (best < 0 || l[t] > l[static_cast<size_t>(best)]))
      best = static_cast<TokenId>(t);
  return best;
}

TEST(SamplerMask, GreedyPicksTheBestAllowedToken) {
  Rng rng(11);
  Sampler s(1000);
  SamplingParams p;
  p.temperature = 0.0f;
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<float> l = random_logits(rng, 1000, 3.0f);
    const std::vector<bool> allowed = random_allowed(rng, 1000, trial % 2 ? 0.01 : 0.5);
    SamplerState st(p, {}, 1, 1);
    EXPECT_EQ(s.sample(l, p, kNoEos, st, mask_of(allowed)).token, reference_argmax(l, allowed));
  }
  // The unmasked maximum is disallowed: the next best allowed one wins, ties by lower id.
  std::vector<float> l(130, 0.0f);
  l[5] = 9.0f;
  l[70] = 4.0f;
  l[128] = 4.0f;
  std::vector<bool> allowed(130, false);
  allowed[70] = allowed[128] = allowed[3] = true;
  Sampler s130(130);  // a vocabulary that ends inside a mask word
  SamplerState st(p, {}, 1, 1);
  EXPECT_EQ(s130.sample(l, p, kNoEos, st, mask_of(allowed)).token, 70);
}

TEST(SamplerMask, SamplingNeverYieldsADisallowedTokenOverManySeeds) {
  constexpr int32_t kVocab = 4096;
  Rng rng(5);
  Sampler s(kVocab);
  const std::vector<float> l = random_logits(rng, kVocab, 4.0f);
  // The 50 highest logits are all disallowed: an unmasked sampler would pick them nearly always.
  std::vector<TokenId> order(kVocab);
  for (TokenId t = 0; t < kVocab; ++t) order[static_cast<size_t>(t)] = t;
  std::sort(order.begin(), order.end(), [&](TokenId a, TokenId b) {
    return l[static_cast<size_t>(a)] > l[static_cast<size_t>(b)];
  });
  std::vector<bool> allowed = random_allowed(rng, kVocab, 0.2);
  for (int i = 0; i < 50; ++i) allowed[static_cast<size_t>(order[static_cast<size_t>(i)])] = false;
  const std::vector<uint64_t> mask = mask_of(allowed);
  for (const float temperature : {0.7f, 1.0f, 1.2f, 3.0f}) {
    for (int variant = 0; variant < 4; ++variant) {
      SamplingParams p;
      p.temperature = temperature;
      p.top_k = variant == 1 ? 5 : 0;
      p.top_p = variant == 2 ? 0.9f : 1.0f;
      p.min_p = variant == 3 ? 0.05f : 0.0f;
      p.repetition_penalty = variant == 3 ? 1.3f : 1.0f;
      p.presence_penalty = variant == 2 ? 0.5f : 0.0f;
      for (uint64_t seed = 0; seed < 100; ++seed) {
        p.seed = seed;
        SamplerState st(p, {}, 0, 0);
        for (int k = 0; k < 5; ++k) {
          const TokenId t = s.sample(l, p, kNoEos, st, mask).token;
          ASSERT_TRUE(allowed[static_cast<size_t>(t)])
              << "token " << t << " T=" << temperature << " variant " << variant;
        }
      }
    }
  }
}

TEST(SamplerMask, DistributionIsTheSoftmaxOverTheAllowedTokens) {
  // 8 tokens; allowed {1, 2, 4, 7}; temperature 2. Chi-square against the renormalised softmax.
  const std::vector<float> l = {5.0f, 1.0f, 0.5f, 4.0f, -1.0f, 6.0f, 3.0f, 0.0f};
  const std::vector<bool> allowed = {false, true, true, false, true, false, false, true};
  SamplingParams p;
  p.temperature = 2.0f;
  p.seed = 77;
  std::vector<double> want(l.size(), 0.0);
  double z = 0.0;
  for (size_t t = 0; t < l.size(); ++t)
    if (allowed[t]) z += (want[t] = std::exp(static_cast<double>(l[t]) / 2.0));
  for (double& w : want) w /= z;
  Sampler s(8);
  SamplerState st(p, {}, 0, 0);
  std::vector<int> counts(l.size(), 0);
  constexpr int kN = 40000;
  const std::vector<uint64_t> mask = mask_of(allowed);
  for (int i = 0; i < kN; ++i)
    ++counts[static_cast<size_t>(s.sample(l, p, kNoEos, st, mask).token)];
  double chi2 = 0.0;
  for (size_t t = 0; t < l.size(); ++t) {
    if (!allowed[t]) {
      EXPECT_EQ(counts[t], 0);
      continue;
    }
    const double e = want[t] * kN;
    chi2 += (counts[t] - e) * (counts[t] - e) / e;
  }
  EXPECT_LT(chi2, 16.27);  // 99.9% quantile, 3 degrees of freedom
}

TEST(SamplerMask, TopKAndTopPCountOnlyAllowedTokens) {
  // Disallowed tokens hold the highest logits; top_k=2 keeps the two best ALLOWED ones.
  const std::vector<float> l = {9.0f, 8.0f, 2.0f, 1.0f, 0.5f, 7.0f};
  const std::vector<bool> allowed = {false, false, true, true, true, false};
  const std::vector<uint64_t> mask = mask_of(allowed);
  Sampler s(6);
  SamplingParams p;
  p.top_k = 2;
  p.seed = 1;
  SamplerState st(p, {}, 0, 0);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 2000; ++i)
    ++counts[static_cast<size_t>(s.sample(l, p, kNoEos, st, mask).token)];
  EXPECT_GT(counts[2], 0);
  EXPECT_GT(counts[3], 0);
  EXPECT_EQ(counts[0] + counts[1] + counts[4] + counts[5], 0);
  // top_p = 0.5 among the allowed: token 2 alone carries exp(2)/(e^2+e^1+e^0.5) = 0.63 of it.
  p.top_k = 0;
  p.top_p = 0.5f;
  SamplerState st2(p, {}, 0, 0);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(s.sample(l, p, kNoEos, st2, mask).token, 2);
}

TEST(SamplerMask, MinTokensYieldsToAGrammarThatCanOnlyEnd) {
  // Only EOS allowed (the grammar is complete) while min_tokens still holds EOS back: the mask
  // wins, EOS is chosen rather than failing.
  constexpr TokenId kEos = 3;
  const std::vector<float> l = {1.0f, 2.0f, 3.0f, -5.0f};
  std::vector<bool> allowed = {false, false, false, true};
  SamplingParams p;
  p.temperature = 0.0f;
  p.min_tokens = 10;
  Sampler s(4);
  SamplerState st(p, {}, 0, 0);
  EXPECT_EQ(s.sample(l, p, kEos, st, mask_of(allowed)).token, kEos);
  // EOS and token 0 allowed: min_tokens applies, token 0 is chosen.
  allowed[0] = true;
  SamplerState st2(p, {}, 0, 0);
  EXPECT_EQ(s.sample(l, p, kEos, st2, mask_of(allowed)).token, 0);
}

TEST(SamplerMask, BatchWithMasksEqualsRowByRow) {
  constexpr int32_t kVocab = 300, kRows = 3;
  Rng rng(9);
  const std::vector<float> logits = random_logits(rng, kVocab * kRows, 2.0f);
  std::vector<uint64_t> masks;
  for (int32_t i = 0; i < kRows; ++i) {
    const std::vector<uint64_t> m = mask_of(random_allowed(rng, kVocab, 0.3));
    masks.insert(masks.end(), m.begin(), m.end());
  }
  std::vector<SamplingParams> params(kRows);
  params[0].temperature = 0.0f;
  params[1].top_k = 4;
  params[2].top_p = 0.8f;
  std::vector<SamplerState> a, b;
  for (int32_t i = 0; i < kRows; ++i) {
    a.emplace_back(params[static_cast<size_t>(i)], std::span<const TokenId>{}, 3, i);
    b.emplace_back(params[static_cast<size_t>(i)], std::span<const TokenId>{}, 3, i);
  }
  Sampler s(kVocab);
  const auto n_words = static_cast<size_t>(s.n_mask_words());
  std::vector<const SamplingParams*> pp;
  std::vector<SamplerState*> sp;
  for (int32_t i = 0; i < kRows; ++i) {
    pp.push_back(&params[static_cast<size_t>(i)]);
    sp.push_back(&a[static_cast<size_t>(i)]);
  }
  std::vector<SampleResult> out(kRows);
  for (int step = 0; step < 20; ++step) {
    s.sample_batch(logits, pp, kNoEos, sp, out, masks);
    for (size_t i = 0; i < kRows; ++i) {
      const auto m = std::span<const uint64_t>(masks).subspan(i * n_words, n_words);
      const SampleResult r = s.sample(std::span<const float>(logits).subspan(i * kVocab, kVocab),
                                      params[i], kNoEos, b[i], m);
      EXPECT_EQ(out[i].token, r.token);
      EXPECT_TRUE((m[static_cast<size_t>(r.token) / 64] >> (r.token % 64)) & 1);
    }
  }
}

}  // namespace
}  // namespace dss
