// Mixture-of-experts block of one layer (docs/deepseek-reference.md 2.6): noaux_tc routing over
// the layer's experts, the routed experts' SwiGLU FFNs weighted per token, plus the shared
// expert. The backend's moe() does the routing and the grouped expert products.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "io/model_config.h"
#include "model/deepseek/weights.h"
#include "model/deepseek/workspace.h"

namespace dss {

// Reads ws.xn [T, d_model], writes ws.tmp [T, d_model]; counts ws.routed_expert_reads and
// records the routing in ws.trace (layer i_layer) when set.
template <ModelBackend B>
void moe_forward(const B& be, const ModelConfig& c, const MoeWeights& m, int32_t i_layer,
                 int32_t n_tok, Workspace& ws);

// When ws.trace is set: the n_tok tokens' chosen experts (ws.sel_experts), sorted, as layer
// i_layer's routing.
void record_routing(const ModelConfig& c, int32_t i_layer, int32_t n_tok, Workspace& ws);

}  // namespace dss
