// Dense SwiGLU FFN block (the first_k_dense_replace layers): out = down(silu(gate x) * up x).
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "model/deepseek/workspace.h"

namespace dss {

// Reads ws.xn [T, d_model], writes ws.tmp [T, d_model].
template <ModelBackend B>
void mlp_forward(const B& be, const FfnWeights& f, int32_t n_tok, Workspace& ws) {
  be.ffn(f, ws.xn.data(), n_tok, ws.tmp.data(), *ws.backend);
}

}  // namespace dss
