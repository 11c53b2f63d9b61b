// The MoE block under DP attention (ShardSpec::dp_attention): every rank has its own tokens and
// holds the routed experts [r E/S, (r+1) E/S) of S ranks. Per layer, in lockstep on every rank:
//   1. route its own tokens (the router is whole everywhere) and run the shared expert on them;
//   2. send each token's row, with its chosen experts and weights, once to every rank holding
//      one of them (all_to_all_v; the row counts first, allgathered);
//   3. run its experts on the rows it received, in chunks of max_tokens rows, each row's
//      weighted sum over the chosen experts it holds (ascending expert order);
//   4. send those partial sums back (all_to_all_v, the same rows in the same order) and add them
//      to the shared expert's output in rank order.
// Deterministic: the sums run in a fixed order, so a token's result does not depend on the
// other ranks' batches. Against one process the order differs (the shared expert first, then
// each rank's experts), a difference at f32 rounding. A rank with no tokens (n_tok 0: an idle
// step, Model::idle_forward) still serves the others' rows.
// Reads ws.xn [n_tok, d_model], writes ws.tmp [n_tok, d_model]; uses the ws.ep_* buffers
// (WorkspaceLimits::ep_ranks == comm.size()); counts the exchange in ws.collective_ns / _bytes.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "dist/communicator.h"
#include "io/model_config.h"
#include "model/deepseek/weights.h"
#include "model/deepseek/workspace.h"

namespace dss {

template <ModelBackend B, Communicator C>
void moe_dispatch_forward(const B& be, C& comm, const ModelConfig& c, const MoeWeights& m,
                          int32_t i_layer, int32_t n_tok, Workspace& ws);

}  // namespace dss
