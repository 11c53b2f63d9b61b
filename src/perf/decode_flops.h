// Arithmetic of bench-model's decode steps, and the bound a step's weight bytes and FLOPs set
// together (`dsserve bench-model`'s bound_bsB_tok_s; issue #7: batch decode against what the
// machine allows, where the weight-bytes roofline alone ignores that a large batch's arithmetic
// may take longer than its weight stream). Counted from the config, 2 FLOPs per multiply-add,
// the absorbed MLA form that decode runs, useful work only:
//   per token and layer: q_a, q_b (or q), kv_a, o; W_UK (q_nope into the latent, H d_nope R)
//     and W_UV (the attention output out of it, H R d_v); per attended position H (2 R + d_rope)
//     (scores over the latent and rope keys, the output over the latent values); V3.2: the
//     indexer's wq_b, wk and weights_proj, H_I D per scored position (every cached one once
//     there are more than index_topk, none before: the selection is dense), and at most
//     index_topk positions attended;
//   per token and dense layer: gate, up, down; per token and MoE layer: the router, its
//     num_experts_per_tok routed experts and the shared experts;
//   lm_head per token.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/model_config.h"

namespace dss::perf {

struct StepFlops {
  // (part, FLOPs) with ActiveBytes' names for the parts that compute: attention, indexer,
  // dense_ffn, router, shared_experts, routed_experts, lm_head (parts with 0 FLOPs are kept).
  std::vector<std::pair<std::string, double>> parts;
  double total = 0;
};

// FLOPs per step of n_steps decode steps of b tokens each from an empty cache, their mean: step
// i's tokens each attend i + 1 positions (bench-model's tgN: N steps after truncate(0)).
StepFlops decode_step_flops(const ModelConfig& c, int32_t b, int32_t n_steps);

// One phase of a step's bound: parts of the forward that run one after another (each layer's
// attention, then its router, then its experts in one dispatch; lm_head last), their weight
// bytes and FLOPs summed over the layers, and the time each alone would take.
struct BoundPhase {
  std::string name;  // attention, indexer, dense_ffn, router, experts (shared + routed),
                     // lm_head, other (embedding row and norms: bytes only)
  double bytes = 0, flops = 0;
  double bytes_s = 0;  // bytes at the read bandwidth
  double flops_s = 0;  // FLOPs at the arithmetic peak
};
struct StepBound {
  std::vector<BoundPhase>
      phases;          // in the order above, phases with neither bytes nor FLOPs left out
  double seconds = 0;  // sum over the phases of max(bytes_s, flops_s)
};

// The least time a step can take on a machine that reads read_gbps and computes peak_gflops:
// per phase the slower of its bytes and its FLOPs, summed (phases do not overlap: the forward
// runs them in order, each over all threads). A lower bound, not a model: a phase's bytes and
// arithmetic overlapping perfectly reach it, and summing each phase's layers before taking the
// max can only lower it. step_bytes: ActiveBytes::step_parts.
StepBound decode_step_bound(const std::vector<std::pair<std::string, double>>& step_bytes,
                            const StepFlops& flops, double read_gbps, double peak_gflops);

}  // namespace dss::perf
