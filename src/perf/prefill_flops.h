// Arithmetic of one prefill, the numerator of `dsserve bench-model`'s prefill GFLOP/s (issue #7:
// prefill as a fraction of the machine's peak). Counted from the config, 2 FLOPs per
// multiply-add, useful work only (what a causal mask or the V3.2 selection leaves; no padding):
//   per token and layer: q_a, q_b (or q), kv_a, o, the dense FFN or the router + k routed + the
//   shared experts; V3.2: the indexer's wq_b, wk, weights_proj;
//   per cached position and layer: kv_b (the naive form expands each position once per chunk;
//   one chunk here);
//   per (token, attended position) pair and layer: scores and P V, 2 H (d_qk + d_v) FLOPs
//   (V3.2: at most index_topk positions attended; a token past index_topk has every position up
//   to its own scored by the indexer, one within it nothing: its selection is dense);
//   lm_head for the last token only (what bench-model's ppN computes).
#pragma once

#include <cstdint>

#include "io/model_config.h"

namespace dss::perf {

// FLOPs of one forward of n tokens on an empty cache (positions 0 .. n - 1).
double prefill_flops(const ModelConfig& c, int64_t n);

// Multiply-adds per token and layer of the attention projections (q_a and q_b, or q; kv_a; o)
// and of the V3.2 indexer's (wq_b, wk, weights_proj; 0 without an indexer), both MLA forms'
// (decode_flops.h counts the same).
double attention_projection_macs(const ModelConfig& c);
double indexer_projection_macs(const ModelConfig& c);

}  // namespace dss::perf
