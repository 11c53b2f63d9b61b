#include "model/runtime/model_summary.h"

#include <map>
#include <string>
#include <utility>

namespace dss {

OrderedJson model_summary(const Model& m) {
  const ModelConfig& c = m.config();
  const Checkpoint& ck = m.checkpoint();
  std::map<std::string, std::pair<int64_t, size_t>> by_dtype;  // dtype -> (elements, bytes)
  for (const auto& name : ck.names()) {
    auto t = ck.get(name);
    auto& e = by_dtype[std::string(dtype_name(t->dtype))];
    e.first += t->numel();
    e.second += t->n_bytes;
  }
  OrderedJson j;
  j["architecture"] = model_arch_name(c.arch);
  j["layers"] = c.n_layers;
  j["dense_layers"] = c.n_dense_layers;
  j["hidden_size"] = c.d_model;
  j["heads"] = c.n_heads;
  j["vocab_size"] = c.n_vocab;
  j["experts"] = {{"routed", c.n_experts},
                  {"shared", c.n_shared_experts},
                  {"per_token", c.n_experts_per_tok},
                  {"groups", c.n_expert_groups},
                  {"groups_per_token", c.n_groups_per_tok}};
  j["mla"] = {{"q_lora_rank", c.q_lora_rank}, {"kv_lora_rank", c.kv_lora_rank},
              {"qk_nope_head_dim", c.d_nope}, {"qk_rope_head_dim", c.d_rope},
              {"v_head_dim", c.d_v},          {"softmax_scale", c.softmax_scale()}};
  j["quantization"] = c.quant.int8  ? "int8 per output channel (w8a8_int8)"
                      : c.quant.fp8 ? (c.quant.ue8m0 ? "fp8 e4m3 128x128 blocks, ue8m0 scales"
                                                     : "fp8 e4m3 128x128 blocks")
                                    : "none";
  size_t total_bytes = 0;
  for (const auto& [dt, pb] : by_dtype) {
    j["tensors_by_dtype"][dt] = {{"elements", pb.first}, {"bytes", pb.second}};
    total_bytes += pb.second;
  }
  j["total_bytes"] = total_bytes;
  j["files"] = ck.files().size();
  j["kv_cache_bytes_per_token"] = {{"fp8", m.kv_layout(64, DType::kF8E4M3).bytes_per_token()},
                                   {"bf16", m.kv_layout(64, DType::kBF16).bytes_per_token()},
                                   {"f32", m.kv_layout(64, DType::kF32).bytes_per_token()},
                                   {"default", kv_dtype_name(m.default_kv_dtype())},
                                   {"values_per_layer", c.d_kv_cache()}};
  j["max_position_embeddings"] = c.max_position_embeddings;
  return j;
}

}  // namespace dss
