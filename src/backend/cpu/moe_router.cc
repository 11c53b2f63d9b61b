#include "backend/cpu/moe_router.h"

#include <cmath>
#include <limits>

namespace dss {

namespace {
// Index of the largest value in v[0, n) not yet taken (ties: lowest index).
int32_t argmax_excluding(const float* v, int32_t n, const bool* taken) {
  int32_t best = -1;
  for (int32_t i = 0; i < n; ++i) {
    if (taken[i]) continue;
    if (best < 0 || v[i] > v[best]) best = i;
  }
  return best;
}
}  // namespace

void route_token(const ModelConfig& c, const float* logits, const float* bias, float* scratch,
                 int32_t* experts, float* weights) {
  const int32_t E = c.n_experts, G = c.n_expert_groups, per_group = c.n_experts_per_group();
  float* biased = scratch;           // [E]
  float* group_score = scratch + E;  // [G]
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int32_t e = 0; e < E; ++e) biased[e] = 1.0f / (1.0f + std::exp(-logits[e])) + bias[e];
  if (G > 1) {
    for (int32_t g = 0; g < G; ++g) {
      float a = kNegInf, b = kNegInf;  // top-2 of the group
      for (int32_t j = 0; j < per_group; ++j) {
        const float v = biased[g * per_group + j];
        if (v > a) {
          b = a;
          a = v;
        } else if (v > b) {
          b = v;
        }
      }
      group_score[g] = a + b;
    }
    bool kept[256 + 1] = {};  // n_group <= 256 (checked at config time in practice: 8)
    bool taken[256 + 1] = {};
    for (int32_t k = 0; k < c.n_groups_per_tok; ++k) {
      const int32_t g = argmax_excluding(group_score, G, taken);
      taken[g] = true;
      kept[g] = true;
    }
    for (int32_t g = 0; g < G; ++g) {
      if (kept[g]) continue;
      for (int32_t j = 0; j < per_group; ++j) biased[g * per_group + j] = kNegInf;
    }
  }
  float sum = 0.0f;
  for (int32_t k = 0; k < c.n_experts_per_tok; ++k) {
    int32_t best = -1;
    for (int32_t e = 0; e < E; ++e) {
      bool used = false;
      for (int32_t j = 0; j < k; ++j) used |= experts[j] == e;
      if (used) continue;
      if (best < 0 || biased[e] > biased[best]) best = e;
    }
    experts[k] = best;
    weights[k] = 1.0f / (1.0f + std::exp(-logits[best]));  // unbiased score
    sum += weights[k];
  }
  for (int32_t k = 0; k < c.n_experts_per_tok; ++k) {
    if (c.norm_topk_prob) weights[k] /= sum;
    weights[k] *= c.routed_scale;
  }
}

}  // namespace dss
