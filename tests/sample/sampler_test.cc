// Sampler: greedy, truncation distributions (chi-square against probabilities derived by hand or
// by a straightforward double-precision reference with full sorts), reproducibility, min_tokens,
// raw logprobs and top-n alternatives.
#include "sample/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "base/rng.h"

namespace dss {
namespace {

constexpr TokenId kNoEos = -1;

std::vector<float> log_of(const std::vector<double>& probs) {
  std::vector<float> l;
  for (const double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

// Draws n tokens and returns the chi-square statistic against `want` (probabilities summing to 1).
// Tokens with want == 0 must never be drawn (checked exactly).
double chi_square(const std::vector<float>& logits, const SamplingParams& p,
                  const std::vector<double>& want, int n) {
  Sampler sampler(static_cast<int32_t>(logits.size()));
  SamplerState st(p, {}, /*engine_seed=*/1, /*request_id=*/1);
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n; ++i)
    ++counts[static_cast<size_t>(sampler.sample(logits, p, kNoEos, st).token)];
  double chi2 = 0.0;
  for (size_t t = 0; t < want.size(); ++t) {
    if (want[t] == 0.0) {
      EXPECT_EQ(counts[t], 0) << "token " << t << " should be truncated";
      continue;
    }
    const double e = want[t] * n;
    chi2 += (counts[t] - e) * (counts[t] - e) / e;
  }
  return chi2;
}

// 99.9% quantiles of chi-square with df = 1..7 (tables): a correct sampler fails one in 1000 seeds.
constexpr double kChi2Crit[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32};

std::vector<double> normalise(std::vector<double> w) {
  const double s = std::accumulate(w.begin(), w.end(), 0.0);
  for (double& x : w) x /= s;
  return w;
}

TEST(Sampler, GreedyIsFirstArgmax) {
  Rng rng(3);
  std::vector<float> l(1000);
  for (float& x : l) x = rng.normal();
  l[10] = 9.0f;
  l[500] = 9.0f;
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_k = 5;  // ignored by greedy
  Sampler s(1000);
  SamplerState st(p, {}, 0, 0);
  EXPECT_EQ(s.sample(l, p, kNoEos, st).token, 10);
  EXPECT_EQ(st.n_generated(), 1);
}

TEST(Sampler, TemperatureOneFollowsSoftmax) {
  const std::vector<double> probs = {0.4, 0.3, 0.2, 0.1};
  SamplingParams p;
  EXPECT_LT(chi_square(log_of(probs), p, probs, 40000), kChi2Crit[3]);
}

TEST(Sampler, TemperatureSharpensAndFlattens) {
  const std::vector<double> probs = {0.4, 0.3, 0.2, 0.1};
  SamplingParams p;
  p.temperature = 2.0f;  // p_i^(1/2), renormalised
  std::vector<double> want;
  for (const double q : probs) want.push_back(std::sqrt(q));
  EXPECT_LT(chi_square(log_of(probs), p, normalise(want), 40000), kChi2Crit[3]);
  p.temperature = 0.5f;  // p_i^2: 0.16, 0.09, 0.04, 0.01 over 0.30
  EXPECT_LT(chi_square(log_of(probs), p, {0.16 / 0.3, 0.09 / 0.3, 0.04 / 0.3, 0.01 / 0.3}, 40000),
            kChi2Crit[3]);
}

TEST(Sampler, TopKKeepsKLargest) {
  SamplingParams p;
  p.top_k = 3;  // 0.4, 0.3, 0.2 over 0.9
  EXPECT_LT(
      chi_square(log_of({0.4, 0.3, 0.2, 0.1}), p, {0.4 / 0.9, 0.3 / 0.9, 0.2 / 0.9, 0.0}, 40000),
      kChi2Crit[2]);
}

TEST(Sampler, TopKKeepsTiesAtTheBoundary) {
  SamplingParams p;
  p.top_k = 2;  // 0.4, then a tie 0.25 / 0.25: vLLM's threshold mask keeps both tied tokens
  EXPECT_LT(chi_square(log_of({0.4, 0.25, 0.25, 0.1}), p, {0.4 / 0.9, 0.25 / 0.9, 0.25 / 0.9, 0.0},
                       40000),
            kChi2Crit[2]);
}

TEST(Sampler, TopPKeepsTheTokenThatCrossesP) {
  SamplingParams p;
  p.top_p = 0.6f;  // 0.4 (mass before 0 < 0.6), 0.3 (before 0.4 < 0.6) kept; 0.2 (before 0.7) not
  EXPECT_LT(chi_square(log_of({0.4, 0.3, 0.2, 0.1}), p, {4.0 / 7, 3.0 / 7, 0.0, 0.0}, 40000),
            kChi2Crit[1]);
}

TEST(Sampler, MinPDropsTokensBelowFractionOfMax) {
  SamplingParams p;
  p.min_p = 0.5f;  // keep p >= 0.2: 0.4, 0.3, 0.2 over 0.9
  EXPECT_LT(
      chi_square(log_of({0.4, 0.3, 0.2, 0.1}), p, {0.4 / 0.9, 0.3 / 0.9, 0.2 / 0.9, 0.0}, 40000),
      kChi2Crit[2]);
}

TEST(Sampler, MinPComesBeforeTopPAsInVllmV1) {
  // min_p 0.4 keeps p >= 0.16: 0.4, 0.3, 0.2, renormalised 4/9, 3/9, 2/9. top_p 0.75 then keeps
  // 4/9 (before 0) and 3/9 (before 0.44) but not 2/9 (before 0.78 >= 0.75): tokens 0, 1 as 4:3.
  // (The v0 order, top-p first, would keep 0.2 too: before it 0.7 < 0.75.)
  SamplingParams p;
  p.min_p = 0.4f;
  p.top_p = 0.75f;
  EXPECT_LT(chi_square(log_of({0.4, 0.3, 0.2, 0.1}), p, {4.0 / 7, 3.0 / 7, 0.0, 0.0}, 40000),
            kChi2Crit[1]);
}

// Straightforward reference: full sort in double; order temperature, min-p, top-k, top-p.
std::vector<double> reference_probs(const std::vector<float>& logits, const SamplingParams& p) {
  const size_t n = logits.size();
  std::vector<double> w(n);
  for (size_t i = 0; i < n; ++i) w[i] = static_cast<double>(logits[i]) / p.temperature;
  const double m = *std::max_element(w.begin(), w.end());
  std::vector<double> q(n);
  for (size_t i = 0; i < n; ++i) q[i] = std::exp(w[i] - m);  // q_max = 1
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return q[a] > q[b] || (q[a] == q[b] && a < b); });
  std::vector<bool> keep(n, true);
  for (size_t i = 0; i < n; ++i) keep[i] = q[i] >= p.min_p;
  if (p.top_k > 0) {
    std::vector<size_t> kept;
    for (const size_t t : order)
      if (keep[t]) kept.push_back(t);
    if (static_cast<size_t>(p.top_k) < kept.size()) {
      const double kth = q[kept[static_cast<size_t>(p.top_k) - 1]];
      for (size_t i = 0; i < n; ++i) keep[i] = keep[i] && q[i] >= kth;
    }
  }
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += keep[i] ? q[i] : 0.0;
  double before = 0.0;
  for (const size_t t : order) {
    if (!keep[t]) continue;
    if (before >= p.top_p * total) keep[t] = false;
    before += q[t];
  }
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = keep[i] ? q[i] : 0.0;
  return normalise(out);
}

TEST(Sampler, CombinedTruncationMatchesReference) {
  Rng rng(11);
  std::vector<float> l(8);
  for (float& x : l) x = 1.5f * rng.normal();
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 6;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  const std::vector<double> want = reference_probs(l, p);
  const auto n_kept = std::count_if(want.begin(), want.end(), [](double x) { return x > 0; });
  ASSERT_GE(n_kept, 2);  // the case exercises sampling, not a forced choice
  EXPECT_LT(chi_square(l, p, want, 40000), kChi2Crit[n_kept - 1]);
}

TEST(Sampler, LargeVocabTruncationStaysInsideTheNucleus) {
  constexpr int32_t kVocab = 129280;
  Rng rng(5);
  std::vector<float> l(kVocab);
  for (float& x : l) x = 3.0f * rng.normal();
  Sampler s(kVocab);
  for (const auto& [k, top_p] : {std::pair{50, 1.0f}, std::pair{0, 0.9f}, std::pair{40, 0.5f}}) {
    SamplingParams p;
    p.top_k = k;
    p.top_p = top_p;
    const std::vector<double> want = reference_probs(l, p);
    SamplerState st(p, {}, 9, 9);
    for (int i = 0; i < 50; ++i) {
      const TokenId t = s.sample(l, p, kNoEos, st).token;
      ASSERT_GT(want[static_cast<size_t>(t)], 0.0) << "k=" << k << " top_p=" << top_p;
    }
  }
}

// More than 256 candidates takes the bucketed top-p path. 1000 tokens whose logits are 0.001
// apart (about 16 per bucket) put the top-p boundary inside a crowded bucket. Each kept token has
// probability about 1/600, so 30000 draws hit every kept token (miss chance ~ 600 * e^-50) and,
// if the boundary were wrong by even one token, would either miss or exceed the reference set.
TEST(Sampler, BucketedTopPKeepsExactlyTheReferenceSet) {
  constexpr int32_t kVocab = 1000;
  std::vector<float> l(kVocab);
  Rng rng(21);
  std::vector<int32_t> perm(kVocab);
  std::iota(perm.begin(), perm.end(), 0);
  for (int32_t i = kVocab - 1; i > 0; --i)
    std::swap(perm[static_cast<size_t>(i)], perm[rng.next_u64() % static_cast<uint64_t>(i + 1)]);
  for (int32_t i = 0; i < kVocab; ++i)
    l[static_cast<size_t>(perm[static_cast<size_t>(i)])] = -0.001f * static_cast<float>(i);
  SamplingParams p;
  p.top_p = 0.6f;
  const std::vector<double> want = reference_probs(l, p);
  std::vector<bool> in_ref(kVocab);
  int32_t n_ref = 0;
  for (int32_t t = 0; t < kVocab; ++t)
    n_ref += (in_ref[static_cast<size_t>(t)] = want[static_cast<size_t>(t)] > 0.0) ? 1 : 0;
  ASSERT_GT(n_ref, 300);
  ASSERT_LT(n_ref, 900);
  Sampler s(kVocab);
  SamplerState st(p, {}, 2, 2);
  std::vector<bool> drawn(kVocab, false);
  for (int i = 0; i < 30000; ++i)
    drawn[static_cast<size_t>(s.sample(l, p, kNoEos, st).token)] = true;
  EXPECT_EQ(drawn, in_ref);
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferent) {
  constexpr int32_t kVocab = 64;
  auto draw = [&](std::optional<uint64_t> seed, RequestId id) {
    SamplingParams p;
    p.seed = seed;
    Sampler s(kVocab);
    SamplerState st(p, {}, /*engine_seed=*/77, id);
    Rng logits_rng(1);  // the same logits sequence for every call
    std::vector<TokenId> out;
    std::vector<float> l(kVocab);
    for (int step = 0; step < 200; ++step) {
      for (float& x : l) x = logits_rng.normal();
      out.push_back(s.sample(l, p, kNoEos, st).token);
    }
    return out;
  };
  EXPECT_EQ(draw(42, 1), draw(42, 2));  // an explicit seed ignores the request id
  EXPECT_NE(draw(42, 1), draw(43, 1));
  EXPECT_EQ(draw(std::nullopt, 5), draw(std::nullopt, 5));
  EXPECT_NE(draw(std::nullopt, 5), draw(std::nullopt, 6));
}

TEST(Sampler, MinTokensHoldsBackEosThenReleasesIt) {
  // EOS (token 2) is the argmax; the stop id 3 the runner-up; token 0 third.
  const std::vector<float> l = {1.0f, 0.0f, 5.0f, 4.0f};
  SamplingParams p;
  p.temperature = 0.0f;
  p.min_tokens = 2;
  p.stop_token_ids = {3};
  Sampler s(4);
  SamplerState st(p, {}, 0, 0);
  EXPECT_EQ(s.sample(l, p, 2, st).token, 0);
  EXPECT_EQ(s.sample(l, p, 2, st).token, 0);
  EXPECT_EQ(s.sample(l, p, 2, st).token, 2);  // two generated: EOS allowed
}

TEST(Sampler, RawLogprobsAndSortedAlternatives) {
  constexpr int32_t kVocab = 1000;
  Rng rng(8);
  std::vector<float> l(kVocab);
  for (float& x : l) x = 4.0f * rng.normal();
  l[7] = l[8] = 30.0f;  // a tie at the top (max of 1000 draws of 4*N(0,1) is ~13): lower id first
  SamplingParams p;
  p.temperature = 0.7f;  // processing does not change raw logprobs
  p.repetition_penalty = 1.3f;
  p.top_k = 20;
  p.logprobs = 5;
  const std::vector<TokenId> prompt = {7, 100};
  SamplerState st(p, prompt, 0, 0);
  Sampler s(kVocab);
  const SampleResult r = s.sample(l, p, kNoEos, st);

  double m = -1e30, z = 0.0;
  for (const float x : l) m = std::max(m, static_cast<double>(x));
  for (const float x : l) z += std::exp(static_cast<double>(x) - m);
  auto ref = [&](TokenId t) {
    return static_cast<double>(l[static_cast<size_t>(t)]) - m - std::log(z);
  };
  EXPECT_NEAR(r.logprob, ref(r.token), 1e-5);

  std::vector<TokenId> order(kVocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](TokenId a, TokenId b) {
    return l[static_cast<size_t>(a)] > l[static_cast<size_t>(b)];
  });
  ASSERT_EQ(r.top.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(r.top[i].token, order[i]) << i;
    EXPECT_NEAR(r.top[i].logprob, ref(order[i]), 1e-5) << i;
  }
  EXPECT_EQ(r.top[0].token, 7);
  EXPECT_EQ(r.top[1].token, 8);

  p.logprobs = 0;  // the sampled token's logprob only
  const SampleResult r0 = s.sample(l, p, kNoEos, st);
  EXPECT_TRUE(r0.top.empty());
  EXPECT_NEAR(r0.logprob, ref(r0.token), 1e-5);
}

TEST(Sampler, BatchEqualsRowByRow) {
  constexpr int32_t kVocab = 50, kRows = 3;
  Rng rng(4);
  std::vector<float> logits(kVocab * kRows);
  for (float& x : logits) x = rng.normal();
  std::vector<SamplingParams> params(kRows);
  params[0].temperature = 0.0f;
  params[1].top_k = 5;
  params[2].top_p = 0.8f;
  params[2].logprobs = 2;
  auto states_for = [&] {
    std::vector<SamplerState> st;
    for (int32_t i = 0; i < kRows; ++i)
      st.emplace_back(params[static_cast<size_t>(i)], std::span<const TokenId>{}, 3, i);
    return st;
  };
  std::vector<SamplerState> a = states_for(), b = states_for();
  Sampler s(kVocab);
  std::vector<const SamplingParams*> pp;
  std::vector<SamplerState*> sp;
  for (int32_t i = 0; i < kRows; ++i) {
    pp.push_back(&params[static_cast<size_t>(i)]);
    sp.push_back(&a[static_cast<size_t>(i)]);
  }
  std::vector<SampleResult> out(kRows);
  for (int step = 0; step < 20; ++step) {
    s.sample_batch(logits, pp, kNoEos, sp, out);
    for (size_t i = 0; i < kRows; ++i) {
      const SampleResult r = s.sample(std::span<const float>(logits).subspan(i * kVocab, kVocab),
                                      params[i], kNoEos, b[i]);
      EXPECT_EQ(out[i].token, r.token);
      EXPECT_EQ(out[i].logprob, r.logprob);
      EXPECT_EQ(out[i].top.size(), r.top.size());
    }
  }
  EXPECT_EQ(a[2].n_generated(), 20);
}

}  // namespace
}  // namespace dss
