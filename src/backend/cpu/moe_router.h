// noaux_tc routing of one token (docs/deepseek-reference.md section 2.6), a pure function:
//   s = sigmoid(logits); s' = s + bias (selection only);
//   group score = sum of the top-2 s' in each of n_group groups; keep topk_group groups, the
//   others' experts at -inf (never 0); experts = top num_experts_per_tok of s';
//   weights = s[experts] / sum (norm_topk_prob) * routed_scaling_factor.
// Ties go to the lower index. `experts` come out in selection order.
#pragma once

#include <cstdint>

#include "io/model_config.h"

namespace dss {

// logits: [n_experts] router outputs; bias: [n_experts]; scratch: [n_experts + n_groups].
// experts, weights: [n_experts_per_tok].
void route_token(const ModelConfig& cfg, const float* logits, const float* bias, float* scratch,
                 int32_t* experts, float* weights);

}  // namespace dss
