// DeepSeek-V3.2 lightning indexer (docs/deepseek-reference.md 2.9), as the official model.py
// computes it, per layer:
//   keys   kI = LayerNorm(wk x); half-split RoPE on its first d_rope values; Hadamard * D^-0.5;
//          act_quant (UE8M0, one block per key) -> e4m3 values + scale, written to the cache row;
//   query  qI = wq_b cq per head, the same RoPE/Hadamard/act_quant per head;
//          coef_h = weights_proj(x)_h * H^-0.5 * scale_q_h * D^-0.5;
//   score  I(t, s) = scale_k(s) * sum_h coef_h * relu(qI8_h . kI8(s)), s <= t (the backend's
//          indexer_select), and the top min(index_topk, t + 1) positions per token.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "core/forward_batch.h"
#include "io/model_config.h"
#include "kv/kv_cache.h"
#include "model/deepseek/rope.h"
#include "model/deepseek/weights.h"
#include "model/deepseek/workspace.h"

namespace dss {

// Keys and query scores for the step's tokens: the keys into the indexer part of the new cache
// rows (ws.kv_new, rows of d_row floats), queries and coefficients into ws.idx_q / ws.idx_w.
// Reads ws.xn and ws.q_a (cq after q_a_layernorm).
template <ModelBackend B>
void indexer_keys(const B& be, const ModelConfig& c, const RopeTable& rope, const IndexerWeights& w,
                  const ForwardBatch& b, int32_t d_row, Workspace& ws);

// Sequence i_seq's selections (ws.sel / ws.n_sel of its tokens) over the cached keys of layer
// i_layer; recorded in ws.trace when set.
template <ModelBackend B>
void indexer_select(const B& be, const ModelConfig& c, int32_t i_layer, const ForwardBatch& b,
                    int32_t i_seq, const KvCache& kv, Workspace& ws);

}  // namespace dss
