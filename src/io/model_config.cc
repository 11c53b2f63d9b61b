#include "io/model_config.h"

#include <cmath>
#include <filesystem>

namespace dss {

std::string model_arch_name(ModelArch a) {
  return a == ModelArch::kDeepseekV32 ? "DeepseekV32ForCausalLM" : "DeepseekV3ForCausalLM";
}

float ModelConfig::yarn_mscale() const {
  if (!rope.yarn || rope.factor <= 1.0f) return 1.0f;
  return 0.1f * rope.mscale_all_dim * std::log(rope.factor) + 1.0f;
}

float ModelConfig::softmax_scale() const {
  const float m = yarn_mscale();
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(d_qk()))) * m * m;
}

namespace {

// Reads config keys with errors that name the key.
class Reader {
 public:
  Reader(const Json& j, std::string what) : j_(j), what_(std::move(what)) {}

  Status req_int(const char* key, int32_t& out, int32_t min_value = 1) {
    if (!j_.contains(key) || j_[key].is_null()) return Status::error(what_, ": ", key, " missing");
    if (!j_[key].is_number_integer()) return Status::error(what_, ": ", key, " must be an integer");
    const auto v = j_[key].get<int64_t>();
    if (v < min_value || v > INT32_MAX)
      return Status::error(what_, ": ", key, " = ", v, " out of range (min ", min_value, ")");
    out = static_cast<int32_t>(v);
    return Status::ok();
  }
  Status opt_int(const char* key, int32_t& out, int32_t min_value = 0) {
    if (!j_.contains(key) || j_[key].is_null()) return Status::ok();
    return req_int(key, out, min_value);
  }
  Status req_float(const char* key, float& out) {
    if (!j_.contains(key) || j_[key].is_null()) return Status::error(what_, ": ", key, " missing");
    if (!j_[key].is_number()) return Status::error(what_, ": ", key, " must be a number");
    out = j_[key].get<float>();
    if (!std::isfinite(out)) return Status::error(what_, ": ", key, " must be finite");
    return Status::ok();
  }
  Status opt_float(const char* key, float& out) {
    if (!j_.contains(key) || j_[key].is_null()) return Status::ok();
    return req_float(key, out);
  }
  Status opt_bool(const char* key, bool& out) {
    if (!j_.contains(key) || j_[key].is_null()) return Status::ok();
    if (!j_[key].is_boolean()) return Status::error(what_, ": ", key, " must be true or false");
    out = j_[key].get<bool>();
    return Status::ok();
  }
  Status opt_string(const char* key, std::string& out) {
    if (!j_.contains(key) || j_[key].is_null()) return Status::ok();
    if (!j_[key].is_string()) return Status::error(what_, ": ", key, " must be a string");
    out = j_[key].get<std::string>();
    return Status::ok();
  }

 private:
  const Json& j_;
  std::string what_;
};

}  // namespace

// Long by design: one config.json key after another, each read and validated where it is named
// (the error names the key), in the order of docs/deepseek-reference.md's table.
Result<ModelConfig> ModelConfig::from_hf_json(const Json& j, const std::string& what) {
  if (!j.is_object()) return Status::error(what, ": not a JSON object");
  ModelConfig c;
  Reader r(j, what);
  if (!j.contains("architectures") || !j["architectures"].is_array() ||
      j["architectures"].empty() || !j["architectures"][0].is_string()) {
    return Status::error(what, ": architectures missing");
  }
  const std::string arch = j["architectures"][0].get<std::string>();
  if (arch == "DeepseekV3ForCausalLM") {
    c.arch = ModelArch::kDeepseekV3;
  } else if (arch == "DeepseekV32ForCausalLM") {
    c.arch = ModelArch::kDeepseekV32;
  } else {
    return Status::error(what, ": architectures = ", arch,
                         " is not supported (DeepseekV3ForCausalLM or DeepseekV32ForCausalLM)");
  }
  DSS_RETURN_IF_ERROR(r.opt_string("model_type", c.model_type));
  DSS_RETURN_IF_ERROR(r.req_int("vocab_size", c.n_vocab));
  DSS_RETURN_IF_ERROR(r.req_int("hidden_size", c.d_model));
  DSS_RETURN_IF_ERROR(r.req_int("intermediate_size", c.d_ff));
  DSS_RETURN_IF_ERROR(r.req_int("moe_intermediate_size", c.d_ff_expert));
  DSS_RETURN_IF_ERROR(r.req_int("num_hidden_layers", c.n_layers));
  DSS_RETURN_IF_ERROR(r.req_int("first_k_dense_replace", c.n_dense_layers, 0));
  DSS_RETURN_IF_ERROR(r.req_int("num_attention_heads", c.n_heads));
  if (j.contains("q_lora_rank") && j["q_lora_rank"].is_null()) {
    return Status::error(
        what, ": q_lora_rank = null (plain q_proj, DeepSeek-V2-Lite style) is not supported");
  }
  DSS_RETURN_IF_ERROR(r.req_int("q_lora_rank", c.q_lora_rank));
  DSS_RETURN_IF_ERROR(r.req_int("kv_lora_rank", c.kv_lora_rank));
  DSS_RETURN_IF_ERROR(r.req_int("qk_nope_head_dim", c.d_nope));
  DSS_RETURN_IF_ERROR(r.req_int("qk_rope_head_dim", c.d_rope));
  DSS_RETURN_IF_ERROR(r.req_int("v_head_dim", c.d_v));
  DSS_RETURN_IF_ERROR(r.req_int("n_routed_experts", c.n_experts));
  DSS_RETURN_IF_ERROR(r.req_int("n_shared_experts", c.n_shared_experts, 0));
  DSS_RETURN_IF_ERROR(r.req_int("num_experts_per_tok", c.n_experts_per_tok));
  DSS_RETURN_IF_ERROR(r.req_int("n_group", c.n_expert_groups));
  DSS_RETURN_IF_ERROR(r.req_int("topk_group", c.n_groups_per_tok));
  DSS_RETURN_IF_ERROR(r.req_float("routed_scaling_factor", c.routed_scale));
  DSS_RETURN_IF_ERROR(r.opt_bool("norm_topk_prob", c.norm_topk_prob));
  DSS_RETURN_IF_ERROR(r.opt_float("rms_norm_eps", c.rms_eps));
  DSS_RETURN_IF_ERROR(r.opt_float("rope_theta", c.rope_theta));
  DSS_RETURN_IF_ERROR(r.req_int("max_position_embeddings", c.max_position_embeddings));
  DSS_RETURN_IF_ERROR(r.opt_int("bos_token_id", c.bos_token_id));
  DSS_RETURN_IF_ERROR(r.opt_int("eos_token_id", c.eos_token_id));
  for (const auto& [key, id] :
       {std::pair{"bos_token_id", c.bos_token_id}, std::pair{"eos_token_id", c.eos_token_id}}) {
    if (id >= c.n_vocab)
      return Status::error(what, ": ", key, " = ", id, " is outside the vocabulary (vocab_size ",
                           c.n_vocab, ")");
  }
  DSS_RETURN_IF_ERROR(r.opt_int("num_nextn_predict_layers", c.n_mtp_layers));
  DSS_RETURN_IF_ERROR(r.opt_bool("tie_word_embeddings", c.tie_word_embeddings));

  std::string s;
  s = "sigmoid";
  DSS_RETURN_IF_ERROR(r.opt_string("scoring_func", s));
  if (s != "sigmoid")
    return Status::error(what, ": scoring_func = ", s, " is not supported (sigmoid)");
  s = "noaux_tc";
  DSS_RETURN_IF_ERROR(r.opt_string("topk_method", s));
  if (s != "noaux_tc")
    return Status::error(what, ": topk_method = ", s, " is not supported (noaux_tc)");
  s = "silu";
  DSS_RETURN_IF_ERROR(r.opt_string("hidden_act", s));
  if (s != "silu") return Status::error(what, ": hidden_act = ", s, " is not supported (silu)");
  int32_t moe_freq = 1;
  DSS_RETURN_IF_ERROR(r.opt_int("moe_layer_freq", moe_freq, 1));
  if (moe_freq != 1)
    return Status::error(what, ": moe_layer_freq = ", moe_freq, " is not supported (1)");

  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    const Json& rs = j["rope_scaling"];
    if (!rs.is_object()) return Status::error(what, ": rope_scaling must be an object");
    Reader rr(rs, what + ": rope_scaling");
    std::string type;
    DSS_RETURN_IF_ERROR(rr.opt_string("type", type));
    if (type.empty()) DSS_RETURN_IF_ERROR(rr.opt_string("rope_type", type));
    if (type != "yarn")
      return Status::error(what, ": rope_scaling.type = '", type, "' is not supported (yarn)");
    c.rope.yarn = true;
    DSS_RETURN_IF_ERROR(rr.req_float("factor", c.rope.factor));
    DSS_RETURN_IF_ERROR(
        rr.req_int("original_max_position_embeddings", c.rope.original_max_position));
    DSS_RETURN_IF_ERROR(rr.opt_float("beta_fast", c.rope.beta_fast));
    DSS_RETURN_IF_ERROR(rr.opt_float("beta_slow", c.rope.beta_slow));
    DSS_RETURN_IF_ERROR(rr.opt_float("mscale", c.rope.mscale));
    DSS_RETURN_IF_ERROR(rr.opt_float("mscale_all_dim", c.rope.mscale_all_dim));
  }

  if (j.contains("quantization_config") && !j["quantization_config"].is_null()) {
    const Json& q = j["quantization_config"];
    if (!q.is_object()) return Status::error(what, ": quantization_config must be an object");
    Reader qr(q, what + ": quantization_config");
    std::string method, fmt = "e4m3", scale_fmt, act = "dynamic";
    DSS_RETURN_IF_ERROR(qr.opt_string("quant_method", method));
    if (method == "w8a8_int8") {  // per-channel INT8 weights (docs/quantization.md)
      c.quant.int8 = true;
      method.clear();
    } else if (method != "fp8") {
      return Status::error(what, ": quantization_config.quant_method = '", method,
                           "' is not supported (fp8 | w8a8_int8)");
    }
    DSS_RETURN_IF_ERROR(qr.opt_string("fmt", fmt));
    if (fmt != "e4m3")
      return Status::error(what, ": quantization_config.fmt = '", fmt, "' is not supported (e4m3)");
    DSS_RETURN_IF_ERROR(qr.opt_string("activation_scheme", act));
    DSS_RETURN_IF_ERROR(qr.opt_string("scale_fmt", scale_fmt));
    if (!scale_fmt.empty() && scale_fmt != "ue8m0") {
      return Status::error(what, ": quantization_config.scale_fmt = '", scale_fmt,
                           "' is not supported (ue8m0)");
    }
    c.quant.fp8 = !c.quant.int8;
    c.quant.ue8m0 = scale_fmt == "ue8m0";
    c.quant.dynamic_activations = act == "dynamic";
    if (q.contains("weight_block_size")) {
      const Json& b = q["weight_block_size"];
      if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() ||
          !b[1].is_number_integer() || b[0].get<int>() != 128 || b[1].get<int>() != 128) {
        return Status::error(what, ": quantization_config.weight_block_size must be [128, 128]");
      }
    }
  }

  if (c.arch == ModelArch::kDeepseekV32) {
    DSS_RETURN_IF_ERROR(r.req_int("index_n_heads", c.index_n_heads));
    DSS_RETURN_IF_ERROR(r.req_int("index_head_dim", c.index_head_dim));
    DSS_RETURN_IF_ERROR(r.req_int("index_topk", c.index_topk));
    if ((c.index_head_dim & (c.index_head_dim - 1)) != 0 || c.index_head_dim < c.d_rope) {
      return Status::error(what, ": index_head_dim = ", c.index_head_dim,
                           " must be a power of two >= qk_rope_head_dim");
    }
    if (c.kv_lora_rank % 128 != 0) {
      return Status::error(what, ": kv_lora_rank = ", c.kv_lora_rank,
                           " must be a multiple of 128 for DeepseekV32 (FP8 latent blocks)");
    }
  }

  // Cross-key validation.
  if (c.n_dense_layers > c.n_layers)
    return Status::error(what, ": first_k_dense_replace > num_hidden_layers");
  if (c.d_rope % 2 != 0) return Status::error(what, ": qk_rope_head_dim must be even");
  if (c.n_experts % c.n_expert_groups != 0)
    return Status::error(what, ": n_routed_experts must be a multiple of n_group");
  if (c.n_groups_per_tok > c.n_expert_groups) return Status::error(what, ": topk_group > n_group");
  if (c.n_expert_groups > 256) return Status::error(what, ": n_group > 256 is not supported");
  if (c.n_experts > 1024 || c.n_experts_per_tok > 64) {  // fixed-size job / choice arrays (moe.cc)
    return Status::error(what,
                         ": n_routed_experts > 1024 or num_experts_per_tok > 64 is not "
                         "supported");
  }
  if (c.n_experts_per_group() < 2)
    return Status::error(what, ": n_group leaves fewer than 2 experts per group");
  if (c.n_experts_per_tok > c.n_groups_per_tok * c.n_experts_per_group()) {
    return Status::error(what, ": num_experts_per_tok exceeds the experts in topk_group groups");
  }
  if (c.tie_word_embeddings)
    return Status::error(what, ": tie_word_embeddings = true is not supported");
  return c;
}

Result<ModelConfig> ModelConfig::load(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  DSS_ASSIGN_OR_RETURN(Json j, load_json_file(path));
  return from_hf_json(j, path);
}

}  // namespace dss
