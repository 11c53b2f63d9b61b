#include "perf/prefill_flops.h"

#include <algorithm>

namespace dss::perf {

double attention_projection_macs(const ModelConfig& c) {
  const double d = c.d_model, H = c.n_heads, qk = c.d_qk(), Q = c.q_lora_rank;
  return (Q > 0 ? d * Q + Q * H * qk : d * H * qk) + d * (c.kv_lora_rank + c.d_rope) +
         H * c.d_v * d;
}

double indexer_projection_macs(const ModelConfig& c) {
  if (c.index_topk <= 0) return 0;
  const double d = c.d_model, HI = c.index_n_heads, D = c.index_head_dim;
  return c.q_lora_rank * HI * D + d * D + d * HI;
}

double prefill_flops(const ModelConfig& c, int64_t n) {
  const double d = c.d_model, H = c.n_heads, qk = c.d_qk(), dv = c.d_v;
  const double R = c.kv_lora_rank;
  const double tokens = static_cast<double>(n);
  // Multiply-adds per token and layer, attention projections (+ the V3.2 indexer's).
  const double attn_proj = attention_projection_macs(c) + indexer_projection_macs(c);
  const bool v32 = c.index_topk > 0;
  const double HI = c.index_n_heads, D = c.index_head_dim;
  // (token, position) pairs: causal, V3.2 at most index_topk per token; indexer: all causal.
  double pairs = 0, scored_pairs = 0;
  for (int64_t t = 0; t < n; ++t) {
    // The indexer scores only where it selects: not while every position is kept (t < topk).
    if (v32 && t + 1 > c.index_topk) scored_pairs += static_cast<double>(t + 1);
    pairs += static_cast<double>(v32 ? std::min<int64_t>(t + 1, c.index_topk) : t + 1);
  }
  double macs = 0;
  for (int32_t i = 0; i < c.n_layers; ++i) {
    macs += tokens * attn_proj;
    macs += tokens * R * H * (c.d_nope + dv);  // kv_b over every position of the chunk
    macs += pairs * H * (qk + dv);
    if (v32) macs += scored_pairs * HI * D;
    if (c.is_moe_layer(i)) {
      const double F = c.d_ff_expert;
      macs += tokens * (d * c.n_experts + (c.n_experts_per_tok + c.n_shared_experts) * 3 * d * F);
    } else {
      macs += tokens * 3 * d * c.d_ff;
    }
  }
  macs += d * c.n_vocab;  // lm_head, last token
  return 2 * macs;
}

}  // namespace dss::perf
