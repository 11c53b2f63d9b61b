#include "perf/decode_flops.h"

#include <algorithm>

#include "base/check.h"
#include "perf/prefill_flops.h"

namespace dss::perf {

StepFlops decode_step_flops(const ModelConfig& c, int32_t b, int32_t n_steps) {
  DSS_CHECK(b >= 1 && n_steps >= 1, "decode_step_flops(b ", b, ", n_steps ", n_steps, ")");
  const double d = c.d_model, H = c.n_heads, dv = c.d_v;
  const double R = c.kv_lora_rank;
  const bool v32 = c.index_topk > 0;
  const double HI = c.index_n_heads, D = c.index_head_dim;
  // Positions per token, means over the steps: attended (V3.2: at most index_topk), scored by
  // the indexer (every cached position, once there are more than index_topk; until then the
  // selection is dense and nothing is scored).
  double attended = 0, scored = 0;
  for (int32_t i = 0; i < n_steps; ++i) {
    attended += v32 ? std::min<int32_t>(i + 1, c.index_topk) : i + 1;
    if (v32 && i + 1 > c.index_topk) scored += i + 1;
  }
  attended /= n_steps;
  scored /= n_steps;
  // Multiply-adds per token and layer.
  const double attn = attention_projection_macs(c) + H * c.d_nope * R + H * R * dv +
                      attended * H * (2 * R + c.d_rope);
  const double indexer = indexer_projection_macs(c) + scored * HI * D;
  double macs_attn = 0, macs_indexer = 0, dense = 0, router = 0, shared = 0, routed = 0;
  for (int32_t i = 0; i < c.n_layers; ++i) {
    macs_attn += attn;
    macs_indexer += indexer;
    if (c.is_moe_layer(i)) {
      const double expert = 3 * d * c.d_ff_expert;
      router += d * c.n_experts;
      shared += c.n_shared_experts * expert;
      routed += c.n_experts_per_tok * expert;
    } else {
      dense += 3 * d * c.d_ff;
    }
  }
  const double per_token = 2.0 * b;  // FLOPs per multiply-add, tokens per step
  StepFlops f;
  f.parts = {{"attention", per_token * macs_attn},   {"indexer", per_token * macs_indexer},
             {"dense_ffn", per_token * dense},       {"router", per_token * router},
             {"shared_experts", per_token * shared}, {"routed_experts", per_token * routed},
             {"lm_head", per_token * d * c.n_vocab}};
  for (const auto& p : f.parts) f.total += p.second;
  return f;
}

namespace {

// The bound's phase of an ActiveBytes / StepFlops part.
std::string phase_of(const std::string& part) {
  if (part == "shared_experts" || part == "routed_experts") return "experts";
  if (part == "embedding" || part == "norms") return "other";
  DSS_CHECK(part == "attention" || part == "indexer" || part == "dense_ffn" || part == "router" ||
                part == "lm_head",
            "decode_step_bound: unknown part ", part);
  return part;
}

}  // namespace

StepBound decode_step_bound(const std::vector<std::pair<std::string, double>>& step_bytes,
                            const StepFlops& flops, double read_gbps, double peak_gflops) {
  DSS_CHECK(read_gbps > 0 && peak_gflops > 0, "decode_step_bound: ", read_gbps, " GB/s, ",
            peak_gflops, " GFLOP/s");
  StepBound r;
  for (const char* name :
       {"attention", "indexer", "dense_ffn", "router", "experts", "lm_head", "other"}) {
    r.phases.push_back({name});
  }
  auto phase = [&](const std::string& part) -> BoundPhase& {
    const std::string name = phase_of(part);
    const auto it = std::find_if(r.phases.begin(), r.phases.end(),
                                 [&](const BoundPhase& p) { return p.name == name; });
    return *it;  // phase_of names one of the phases above
  };
  for (const auto& [part, b] : step_bytes) phase(part).bytes += b;
  for (const auto& [part, f] : flops.parts) phase(part).flops += f;
  std::erase_if(r.phases, [](const BoundPhase& p) { return p.bytes == 0 && p.flops == 0; });
  for (BoundPhase& p : r.phases) {
    p.bytes_s = p.bytes / (read_gbps * 1e9);
    p.flops_s = p.flops / (peak_gflops * 1e9);
    r.seconds += std::max(p.bytes_s, p.flops_s);
  }
  return r;
}

}  // namespace dss::perf
