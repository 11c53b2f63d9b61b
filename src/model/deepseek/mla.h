// Multi-head Latent Attention block (docs/deepseek-reference.md section 2.3) of one layer:
// q = q_b(rmsnorm(q_a(xn))), kv_a(xn) -> normalised latent [kv_lora_rank] + rotated rope key
// [d_rope] written to the paged cache at the batch's slots (V3.2: the latent through the FP8
// simulation and the indexer's key beside it), then per sequence the naive (prefill) or
// absorbed (decode) attention form over the cache, and tmp = o(attn).
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

// Which MLA form a sequence uses. kAuto: naive (expanded K/V, "MHA mode") for prefill chunks of
// more than one token, absorbed (attention over the cached 512+64 latent, "MQA mode") for
// single-token decode and for a decode verifying a draft (ForwardBatch::seq_n_draft). The forced
// modes exist for tests (the two must agree).
enum class AttnPath { kAuto, kNaive, kAbsorbed };

// Reads ws.xn [T, d_model], writes ws.tmp [T, d_model] and the step's cache rows of layer i_layer.
template <ModelBackend B>
void mla_forward(const B& be, const ModelConfig& c, const RopeTable& rope, const MlaWeights& w,
                 int32_t i_layer, const ForwardBatch& b, KvCache& kv, Workspace& ws, AttnPath path);

}  // namespace dss
