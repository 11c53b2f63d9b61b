// ModelConfig: the Hugging Face config.json of a DeepSeek-V3-family checkpoint, parsed once and
// validated once. Field names follow the project's scheme (n_* counts, d_* widths); each comment
// names the HF key. See docs/deepseek-reference.md section 1 for what each key controls.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "io/json.h"

namespace dss {

enum class ModelArch { kDeepseekV3, kDeepseekV32 };

struct RopeScaling {
  bool yarn = false;    // rope_scaling.type == "yarn" (always applied when factor > 1)
  float factor = 1.0f;  // rope_scaling.factor
  int32_t original_max_position = 4096;  // rope_scaling.original_max_position_embeddings
  float beta_fast = 32.0f;               // rope_scaling.beta_fast
  float beta_slow = 1.0f;                // rope_scaling.beta_slow
  float mscale = 1.0f;                   // rope_scaling.mscale
  float mscale_all_dim = 1.0f;           // rope_scaling.mscale_all_dim (softmax-scale correction)
};

struct QuantScheme {
  bool fp8 = false;                 // quantization_config.quant_method == "fp8"
  bool int8 = false;                // quant_method == "w8a8_int8" (per-channel INT8 weights)
  int32_t block_rows = 128;         // quantization_config.weight_block_size[0]
  int32_t block_cols = 128;         // quantization_config.weight_block_size[1]
  bool ue8m0 = false;               // quantization_config.scale_fmt == "ue8m0"
  bool dynamic_activations = true;  // activation_scheme == "dynamic"
};

struct ModelConfig {
  ModelArch arch = ModelArch::kDeepseekV3;  // architectures[0]
  std::string model_type;                   // model_type
  int32_t n_vocab = 0;                      // vocab_size
  int32_t d_model = 0;                      // hidden_size
  int32_t d_ff = 0;                         // intermediate_size (dense layers)
  int32_t d_ff_expert = 0;                  // moe_intermediate_size (each routed/shared expert)
  int32_t n_layers = 0;                     // num_hidden_layers
  int32_t n_dense_layers = 0;               // first_k_dense_replace
  int32_t n_heads = 0;                      // num_attention_heads
  int32_t q_lora_rank = 0;                  // q_lora_rank
  int32_t kv_lora_rank = 0;                 // kv_lora_rank
  int32_t d_nope = 0;                       // qk_nope_head_dim
  int32_t d_rope = 0;                       // qk_rope_head_dim
  int32_t d_v = 0;                          // v_head_dim
  int32_t n_experts = 0;                    // n_routed_experts
  int32_t n_shared_experts = 0;             // n_shared_experts
  int32_t n_experts_per_tok = 0;            // num_experts_per_tok
  int32_t n_expert_groups = 1;              // n_group
  int32_t n_groups_per_tok = 1;             // topk_group
  float routed_scale = 1.0f;                // routed_scaling_factor
  bool norm_topk_prob = true;               // norm_topk_prob
  float rms_eps = 1e-6f;                    // rms_norm_eps
  float rope_theta = 10000.0f;              // rope_theta
  RopeScaling rope;                         // rope_scaling
  int32_t max_position_embeddings = 0;      // max_position_embeddings
  int32_t bos_token_id = 0;                 // bos_token_id
  int32_t eos_token_id = 1;                 // eos_token_id
  int32_t n_mtp_layers = 0;                 // num_nextn_predict_layers (not executed)
  bool tie_word_embeddings = false;         // tie_word_embeddings
  QuantScheme quant;                        // quantization_config
  // V3.2 lightning indexer (zero for V3).
  int32_t index_n_heads = 0;   // index_n_heads
  int32_t index_head_dim = 0;  // index_head_dim
  int32_t index_topk = 0;      // index_topk

  int32_t d_qk() const { return d_nope + d_rope; }
  int32_t d_kv_cache() const { return kv_lora_rank + d_rope; }  // cached values per token per layer
  int32_t n_experts_per_group() const { return n_experts / n_expert_groups; }
  bool is_moe_layer(int32_t i_layer) const { return i_layer >= n_dense_layers; }
  // YaRN mscale m = 0.1 * mscale_all_dim * ln(factor) + 1 (1 when factor <= 1).
  float yarn_mscale() const;
  // d_qk^-0.5 * m^2: used by both MLA forms (never 1/sqrt(kv_lora_rank + d_rope)).
  float softmax_scale() const;

  // Parses and validates; errors name the offending key ("config.json: kv_lora_rank missing").
  static Result<ModelConfig> from_hf_json(const Json& j, const std::string& what = "config.json");
  static Result<ModelConfig> load(const std::string& checkpoint_dir);
};

std::string model_arch_name(ModelArch a);

}  // namespace dss
