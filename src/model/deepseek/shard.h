// ShardSpec: which part of the model one rank of a tensor-parallel group holds (SGLang's
// --tp-size, with --ep-size equal to it for expert parallelism). The split, for a group of
// `size` ranks, rank r holding the r-th equal part:
//   MLA           heads: q_b and kv_b rows, o_proj columns (row-parallel: partial sums)
//   dense FFN     gate/up rows, down columns (partial sums); the shared expert the same
//   routed experts  expert_parallel: whole experts [r E/size, (r+1) E/size) (others absent);
//                 otherwise every expert's gate/up rows and down columns (partial sums)
//   embedding     vocabulary rows (a token outside the slice embeds as zeros: partial sums)
//   lm_head       vocabulary rows (each rank the logits of its slice: gathered)
//   replicated    q_a, kv_a, norms, the router, the V3.2 indexer
// The runtime (Model::forward) sums the partial results over the group after the embedding,
// the attention and the FFN, and gathers the logits; the blocks only see smaller weights.
// DP attention (--enable-dp-attention, dp_attention): each rank is its own attention group with
// its own requests; only the routed experts are partitioned (whole experts, as above), everything
// else is whole on every rank, and the MoE layers exchange tokens (model/runtime/moe_dispatch.h).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "io/model_config.h"

namespace dss {

struct ShardSpec {
  int32_t rank = 0, size = 1;    // tensor-parallel group
  bool expert_parallel = false;  // routed experts partitioned (--ep-size == --tp-size)
  bool dp_attention = false;     // only the routed experts split (expert_parallel set too)

  bool sharded() const { return size > 1; }
  // The split of everything but the routed experts: none under DP attention.
  ShardSpec dense() const { return dp_attention ? ShardSpec{} : *this; }
  // This rank's part [begin, end) of n things split evenly (n % size == 0: check_shardable).
  int64_t begin(int64_t n) const { return n / size * rank; }
  int64_t end(int64_t n) const { return n / size * (rank + 1); }
};

// An error naming the config key and the size when `cfg` cannot be split by `s` (heads, dense
// and expert widths, experts, vocabulary not divisible), before anything is loaded.
Status check_shardable(const ModelConfig& cfg, const ShardSpec& s);

}  // namespace dss
