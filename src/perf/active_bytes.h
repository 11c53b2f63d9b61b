// Weight bytes one decoded token reads at batch 1: the numerator of the decode roofline
// (`dsserve bench-model`); step_bytes: a batch step's, from the routed experts it read. Counted
// from the loaded model (after any --weight-dtype conversion), every tensor in its stored dtype,
// FP8 block scales and INT8 row scales included:
//   embedding row (one row, + its scale row for FP8), attention (q_a, q_a_norm, q_b, kv_a,
//   kv_a_norm, kv_b, o, norms; the V3.2 indexer), dense FFNs, per MoE layer the router (+ its
//   f32 bias), the shared experts and num_experts_per_tok routed experts, final norm, lm_head.
// kv_b counts as stored: absorbed decode reads the same values through MlaWeights::w_uk_t (its
// W_UK halves transposed, same dtype and scales) and kv_b's own W_UV rows. NOTE: with INT8
// weights w_uk_t holds F32 (per-row scales do not survive a transpose), 4x its stored bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/deepseek/weights.h"

namespace dss::perf {

struct ActiveBytes {
  // (part, bytes) in a fixed order: embedding, attention, indexer, dense_ffn, router,
  // shared_experts, routed_experts, norms, lm_head. Parts with 0 bytes are kept.
  std::vector<std::pair<std::string, int64_t>> parts;
  int64_t total = 0;
  // One routed expert's gate, up and down (every routed expert has one shape; 0 without MoE
  // layers) and the MoE layers: routed_experts = n_moe_layers * num_experts_per_tok *
  // routed_expert_bytes.
  int64_t routed_expert_bytes = 0;
  int64_t routed_bytes = 0;  // the routed_experts part
  int32_t n_moe_layers = 0;
  // Expert parallel: this rank holds only part of the routed experts, so a token reads
  // num_experts_per_tok x (held / all) of them on average (the routed part above is that
  // expectation) and a batch-1 step's actual reads vary around it.
  bool experts_partitioned = false;
  // Weight bytes of one decode step that reads `routed_reads` routed experts in all (summed over
  // the MoE layers, each distinct expert of a layer once: Workspace::routed_expert_reads): the
  // batch-1 total with its routed part replaced (the step's other embedding rows, a few KB, are
  // not counted). At batch 1, routed_reads = n_moe_layers * num_experts_per_tok and this is
  // `total`.
  double step_bytes(double routed_reads) const;
  // The same step's bytes per part: `parts` with routed_experts = routed_reads *
  // routed_expert_bytes; they sum to step_bytes(routed_reads).
  std::vector<std::pair<std::string, double>> step_parts(double routed_reads) const;
};

// Bytes of a matrix in its stored dtype plus its scales (F8: block grid, I8: per row), as f32.
int64_t matrix_bytes(const Matrix& m);

ActiveBytes active_bytes_per_token(const ModelWeights& w, int32_t n_experts_per_tok);

}  // namespace dss::perf
