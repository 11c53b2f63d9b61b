#include "model/deepseek/shard.h"

namespace dss {

Status check_shardable(const ModelConfig& c, const ShardSpec& s) {
  if (s.size < 1 || s.rank < 0 || s.rank >= s.size)
    return Status::error("tensor-parallel rank ", s.rank, " of ", s.size);
  if (!s.sharded()) return Status::ok();
  if (s.dp_attention && !s.expert_parallel)
    return Status::error("DP attention needs the routed experts partitioned (--ep-size)");
  struct Split {
    const char* key;
    int64_t n;
    bool needed;
    const char* flag = "--tp-size";
    bool routed_experts = false;  // the one split DP attention keeps
  };
  const Split splits[] = {
      {"num_attention_heads", c.n_heads, true},
      {"intermediate_size", c.d_ff, c.n_dense_layers > 0},
      {"n_shared_experts * moe_intermediate_size", int64_t{c.n_shared_experts} * c.d_ff_expert,
       c.n_shared_experts > 0},
      {"moe_intermediate_size", c.d_ff_expert, !s.expert_parallel},
      {"n_routed_experts", c.n_experts, s.expert_parallel, "--ep-size", true},
      {"vocab_size", c.n_vocab, true},
  };
  for (const Split& p : splits) {
    const bool split = s.dp_attention ? p.routed_experts : p.needed;
    if (split && p.n % s.size != 0) {
      return Status::error(p.key, " = ", p.n, " is not divisible by ", p.flag, " ", s.size);
    }
  }
  return Status::ok();
}

}  // namespace dss
