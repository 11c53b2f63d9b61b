// Mixture of experts block: router (noaux_tc), routed experts grouped by expert so each expert's
// weights are read once per step, plus the shared expert. Reads ws.xn, writes ws.tmp.
#include <algorithm>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/vec_ops.h"
#include "model/deepseek/moe_router.h"
#include "model/runtime/model.h"

namespace dss {

void Model::moe(int32_t i_layer, const MoeWeights& m, int32_t T, Workspace& ws) const {
  const ModelConfig& c = cfg_;
  const int32_t E = c.n_experts, K = c.n_experts_per_tok;
  const int64_t d = c.d_model;
  mm(m.router, ws.xn.data(), T, ws.router.data());
  for (int32_t t = 0; t < T; ++t) {
    route_token(c, ws.router.data() + static_cast<size_t>(t) * E, m.router_bias.data(),
                ws.route_scratch.data(), ws.sel_experts.data() + static_cast<size_t>(t) * K,
                ws.sel_weights.data() + static_cast<size_t>(t) * K);
  }
  if (ws.trace != nullptr) {
    for (int32_t t = 0; t < T; ++t) {
      std::vector<int32_t> e(ws.sel_experts.begin() + t * K, ws.sel_experts.begin() + (t + 1) * K);
      std::sort(e.begin(), e.end());
      ws.trace->experts[static_cast<size_t>(i_layer)].push_back(std::move(e));
    }
  }
  // Bucket (token, weight) pairs by expert (counting sort keeps token order inside a bucket).
  std::fill(ws.expert_offsets.begin(), ws.expert_offsets.end(), 0);
  for (int32_t i = 0; i < T * K; ++i)
    ws.expert_offsets[static_cast<size_t>(ws.sel_experts[static_cast<size_t>(i)]) + 1]++;
  for (int32_t e = 0; e < E; ++e)
    ws.expert_offsets[static_cast<size_t>(e) + 1] += ws.expert_offsets[static_cast<size_t>(e)];
  const std::vector<int32_t>& off = ws.expert_offsets;
  std::copy(off.begin(), off.end() - 1, ws.expert_cursor.begin());
  for (int32_t i = 0; i < T * K; ++i) {
    const int32_t pos =
        ws.expert_cursor[static_cast<size_t>(ws.sel_experts[static_cast<size_t>(i)])]++;
    ws.expert_tokens[static_cast<size_t>(pos)] = i / K;
    ws.expert_weights[static_cast<size_t>(pos)] = ws.sel_weights[static_cast<size_t>(i)];
  }
  float* out = ws.tmp.data();
  std::fill(out, out + T * d, 0.0f);
  for (int32_t e = 0; e < E; ++e) {
    const int32_t b = off[static_cast<size_t>(e)], n = off[static_cast<size_t>(e) + 1] - b;
    if (n == 0) continue;
    for (int32_t j = 0; j < n; ++j) {
      const int32_t t = ws.expert_tokens[static_cast<size_t>(b + j)];
      std::copy(ws.xn.data() + t * d, ws.xn.data() + (t + 1) * d, ws.xe.data() + j * d);
    }
    ffn(m.experts[static_cast<size_t>(e)], n, c.d_ff_expert, ws.xe.data(), ws.ye.data(), ws);
    for (int32_t j = 0; j < n; ++j) {
      const int32_t t = ws.expert_tokens[static_cast<size_t>(b + j)];
      cpu::axpy(ws.expert_weights[static_cast<size_t>(b + j)], ws.ye.data() + j * d, out + t * d,
                d);
    }
  }
  if (m.has_shared) {
    ffn(m.shared, T, c.n_shared_experts * c.d_ff_expert, ws.xn.data(), ws.ye.data(), ws);
    for (int32_t t = 0; t < T; ++t) cpu::axpy(1.0f, ws.ye.data() + t * d, out + t * d, d);
  }
}

}  // namespace dss
