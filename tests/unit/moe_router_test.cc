// noaux_tc routing against a direct transcription of the reference Gate.forward
// (docs/deepseek-reference.md 2.6), including the -inf group masking pitfall (section 5.1).
#include "backend/cpu/moe_router.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/rng.h"

namespace dss {
namespace {

ModelConfig small_config() {
  ModelConfig c;
  c.n_experts = 16;
  c.n_expert_groups = 4;
  c.n_groups_per_tok = 2;
  c.n_experts_per_tok = 4;
  c.routed_scale = 2.5f;
  return c;
}

// Reference, written independently: sort-based selection.
void route_ref(const ModelConfig& c, const std::vector<float>& logits,
               const std::vector<float>& bias, std::vector<int>& experts,
               std::vector<float>& weights) {
  const int E = c.n_experts, G = c.n_expert_groups, P = E / G;
  std::vector<double> s(E), sb(E);
  for (int e = 0; e < E; ++e) {
    s[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(logits[e])));
    sb[e] = s[e] + bias[e];
  }
  std::vector<std::pair<double, int>> gs;
  for (int g = 0; g < G; ++g) {
    std::vector<double> v(sb.begin() + g * P, sb.begin() + (g + 1) * P);
    std::sort(v.rbegin(), v.rend());
    gs.push_back({v[0] + v[1], g});
  }
  std::stable_sort(gs.begin(), gs.end(), [](auto a, auto b) { return a.first > b.first; });
  std::vector<bool> keep(G, false);
  for (int k = 0; k < c.n_groups_per_tok; ++k) keep[gs[k].second] = true;
  std::vector<std::pair<double, int>> cand;
  for (int e = 0; e < E; ++e) cand.push_back({keep[e / P] ? sb[e] : -INFINITY, e});
  std::stable_sort(cand.begin(), cand.end(), [](auto a, auto b) { return a.first > b.first; });
  experts.clear();
  weights.clear();
  double sum = 0;
  for (int k = 0; k < c.n_experts_per_tok; ++k) {
    experts.push_back(cand[k].second);
    sum += s[cand[k].second];
  }
  for (int e : experts) weights.push_back(static_cast<float>(s[e] / sum * c.routed_scale));
}

TEST(MoeRouter, MatchesReferenceOnRandomInputs) {
  const ModelConfig c = small_config();
  Rng rng(5);
  std::vector<float> scratch(c.n_experts + c.n_expert_groups);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<float> logits(c.n_experts), bias(c.n_experts);
    for (auto& x : logits) x = rng.normal() * 2.0f;
    for (auto& x : bias) x = rng.normal() * 0.5f;
    std::vector<int32_t> got(c.n_experts_per_tok);
    std::vector<float> w(c.n_experts_per_tok);
    route_token(c, logits.data(), bias.data(), scratch.data(), got.data(), w.data());
    std::vector<int> want;
    std::vector<float> ww;
    route_ref(c, logits, bias, want, ww);
    ASSERT_EQ(std::vector<int>(got.begin(), got.end()), want) << "trial " << trial;
    for (int k = 0; k < c.n_experts_per_tok; ++k) ASSERT_NEAR(w[k], ww[k], 1e-5f);
    EXPECT_NEAR(std::accumulate(w.begin(), w.end(), 0.0f), 2.5f, 1e-5f);
  }
}

TEST(MoeRouter, MaskedGroupsLoseEvenWithNegativeBiasedScores) {
  // All biased scores negative: masking the dropped groups with 0 instead of -inf would let
  // their experts win. Groups 0 and 1 have the highest top-2 sums; only their experts may be
  // chosen.
  ModelConfig c = small_config();
  std::vector<float> logits(16, 0.0f), bias(16, -2.0f);
  for (int e = 0; e < 8; ++e) bias[e] = -1.0f;  // groups 0, 1 better
  std::vector<float> scratch(20);
  std::vector<int32_t> ex(4);
  std::vector<float> w(4);
  route_token(c, logits.data(), bias.data(), scratch.data(), ex.data(), w.data());
  for (int32_t e : ex) EXPECT_LT(e, 8);
}

TEST(MoeRouter, WeightsUseUnbiasedScores) {
  ModelConfig c = small_config();
  c.n_expert_groups = 1;
  c.n_groups_per_tok = 1;
  c.n_experts_per_tok = 2;
  std::vector<float> logits(16, -5.0f), bias(16, 0.0f);
  logits[3] = 1.0f;   // high score, no bias
  logits[9] = -1.0f;  // lower score, large bias makes it selected first
  bias[9] = 3.0f;
  std::vector<float> scratch(17);
  std::vector<int32_t> ex(2);
  std::vector<float> w(2);
  route_token(c, logits.data(), bias.data(), scratch.data(), ex.data(), w.data());
  EXPECT_EQ(ex[0], 9);
  EXPECT_EQ(ex[1], 3);
  const float s9 = 1.0f / (1.0f + std::exp(1.0f)), s3 = 1.0f / (1.0f + std::exp(-1.0f));
  EXPECT_NEAR(w[0], s9 / (s9 + s3) * 2.5f, 1e-6f);
  EXPECT_NEAR(w[1], s3 / (s9 + s3) * 2.5f, 1e-6f);
}

}  // namespace
}  // namespace dss
