// The ends of the forward pass: token embedding (plain rows, unscaled) and the logits head
// (final rmsnorm, then lm_head) over the rows the batch asks logits for.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "core/forward_batch.h"
#include "io/model_config.h"
#include "model/deepseek/weights.h"
#include "model/deepseek/workspace.h"

namespace dss {

// ws.h [T, d_model] = embedding rows of b.tokens (a vocabulary-parallel rank: the rows of its
// slice, zeros for the others' tokens). Token ids must lie in [0, n_vocab) (CHECK).
template <ModelBackend B>
void embed_forward(const B& be, const ModelConfig& c, const ModelWeights& w, const ForwardBatch& b,
                   Workspace& ws);

// logits [b.logit_rows.size(), w.lm_head.n_rows] = lm_head(rmsnorm(ws.h[row])) for each logit
// row (a vocabulary-parallel rank: the columns of its slice).
template <ModelBackend B>
void head_forward(const B& be, const ModelConfig& c, const ModelWeights& w, const ForwardBatch& b,
                  Workspace& ws, float* logits);

}  // namespace dss
