#include "model/deepseek/random_checkpoint.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "base/rng.h"
#include "io/model_config.h"
#include "io/safetensors_writer.h"
#include "tensor/dtype.h"

namespace dss {

namespace fs = std::filesystem;

namespace {

uint64_t name_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  uint64_t s = seed ^ h;
  return splitmix64(s);
}

std::vector<uint8_t> to_bytes_bf16(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t b = f32_to_bf16(v[i]);
    std::memcpy(out.data() + 2 * i, &b, 2);
  }
  return out;
}

std::vector<uint8_t> to_bytes_f32(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

class Generator {
 public:
  Generator(const RandomCheckpointOptions& o, CheckpointWriter& w, bool ue8m0)
      : o_(o), w_(w), ue8m0_(ue8m0) {}

  Status linear(const std::string& name, int64_t rows, int64_t cols, float gain,
                bool allow_fp8 = true) {
    std::vector<float> v = normal(name, rows * cols, gain / std::sqrt(static_cast<float>(cols)));
    // Per-128x128-block factor in [e^-0.5, e^0.5] so every block scale differs (as the golden
    // data).
    Rng rb(name_seed(o_.seed, name + "#blocks"));
    const int64_t br = (rows + 127) / 128, bc = (cols + 127) / 128;
    std::vector<float> factor(static_cast<size_t>(br * bc));
    for (auto& f : factor) f = std::exp(rb.uniform() - 0.5f);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c)
        v[static_cast<size_t>(r * cols + c)] *=
            factor[static_cast<size_t>((r / 128) * bc + c / 128)];
    }
    if (!(o_.fp8 && allow_fp8)) return w_.add(name, DType::kBF16, {rows, cols}, to_bytes_bf16(v));
    std::vector<uint8_t> codes(static_cast<size_t>(rows * cols));
    std::vector<float> scales(static_cast<size_t>(br * bc));
    for (int64_t bi = 0; bi < br; ++bi) {
      for (int64_t bj = 0; bj < bc; ++bj) {
        float amax = 0.0f;
        for (int64_t r = bi * 128; r < std::min(rows, bi * 128 + 128); ++r) {
          for (int64_t c = bj * 128; c < std::min(cols, bj * 128 + 128); ++c)
            amax = std::max(amax, std::fabs(v[static_cast<size_t>(r * cols + c)]));
        }
        float s = std::max(amax, 1e-12f) / kFp8E4M3Max;
        if (ue8m0_) s = std::exp2(std::ceil(std::log2(s)));
        scales[static_cast<size_t>(bi * bc + bj)] = s;
        for (int64_t r = bi * 128; r < std::min(rows, bi * 128 + 128); ++r) {
          for (int64_t c = bj * 128; c < std::min(cols, bj * 128 + 128); ++c) {
            codes[static_cast<size_t>(r * cols + c)] =
                f32_to_fp8e4m3(v[static_cast<size_t>(r * cols + c)] / s);
          }
        }
      }
    }
    DSS_RETURN_IF_ERROR(w_.add(name, DType::kF8E4M3, {rows, cols}, std::move(codes)));
    return w_.add(name + "_scale_inv", DType::kF32, {br, bc}, to_bytes_f32(scales));
  }

  // Norm weights: BF16 in V3 checkpoints, F32 in V3.2 ones (as the official releases).
  Status norm(const std::string& name, int64_t n, bool f32 = false) {
    std::vector<float> v = normal(name, n, 0.1f);
    for (auto& x : v) x += 1.0f;
    return f32 ? w_.add(name, DType::kF32, {n}, to_bytes_f32(v))
               : w_.add(name, DType::kBF16, {n}, to_bytes_bf16(v));
  }

  Status dense_bf16(const std::string& name, int64_t rows, int64_t cols, float std) {
    return w_.add(name, DType::kBF16, {rows, cols}, to_bytes_bf16(normal(name, rows * cols, std)));
  }

  Status f32_vector(const std::string& name, int64_t n, float std) {
    return w_.add(name, DType::kF32, {n}, to_bytes_f32(normal(name, n, std)));
  }

 private:
  std::vector<float> normal(const std::string& name, int64_t n, float std) {
    Rng rng(name_seed(o_.seed, name));
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i += 2) {  // Box-Muller, two values per draw
      const float u1 = 1.0f - rng.uniform(), u2 = rng.uniform();
      const float r = std::sqrt(-2.0f * std::log(u1)) * std;
      v[static_cast<size_t>(i)] = r * std::cos(6.2831853f * u2);
      if (i + 1 < n) v[static_cast<size_t>(i) + 1] = r * std::sin(6.2831853f * u2);
    }
    return v;
  }

  const RandomCheckpointOptions& o_;
  CheckpointWriter& w_;
  bool ue8m0_;
};

}  // namespace

Status write_random_checkpoint(const Json& hf_config_in, const RandomCheckpointOptions& o) {
  Json hf = hf_config_in;
  const bool v32 = hf.value("architectures", Json::array()).dump().find("V32") != std::string::npos;
  if (o.fp8) {
    hf["quantization_config"] = {{"activation_scheme", "dynamic"},
                                 {"fmt", "e4m3"},
                                 {"quant_method", "fp8"},
                                 {"weight_block_size", {128, 128}}};
    if (v32) hf["quantization_config"]["scale_fmt"] = "ue8m0";
  } else {
    hf.erase("quantization_config");
  }
  DSS_ASSIGN_OR_RETURN(ModelConfig c, ModelConfig::from_hf_json(hf, "init-model config"));
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return Status::error(o.out_dir, ": cannot create: ", ec.message());
  {
    std::ofstream f(fs::path(o.out_dir) / "config.json");
    f << hf.dump(2) << "\n";
    if (!f) return Status::error(o.out_dir, "/config.json: write failed");
  }
  CheckpointWriter writer(o.out_dir, o.shard_bytes);
  Generator g(o, writer, c.quant.ue8m0);
  const int64_t H = c.n_heads, d = c.d_model;
  const int64_t total = 3 + static_cast<int64_t>(c.n_layers) + c.n_mtp_layers;
  int64_t done = 0;
  DSS_RETURN_IF_ERROR(g.dense_bf16("model.embed_tokens.weight", c.n_vocab, d, 1.0f));
  DSS_RETURN_IF_ERROR(g.norm("model.norm.weight", d, v32));
  DSS_RETURN_IF_ERROR(
      g.dense_bf16("lm_head.weight", c.n_vocab, d, 4.0f / std::sqrt(static_cast<float>(d))));
  done = 3;
  // One decoder block (attention + dense FFN or MoE) under model.layers.{i}.
  auto layer = [&](int32_t i) -> Status {
    const std::string p = "model.layers." + std::to_string(i);
    DSS_RETURN_IF_ERROR(g.norm(p + ".input_layernorm.weight", d, v32));
    DSS_RETURN_IF_ERROR(g.norm(p + ".post_attention_layernorm.weight", d, v32));
    const std::string a = p + ".self_attn";
    DSS_RETURN_IF_ERROR(g.linear(a + ".q_a_proj.weight", c.q_lora_rank, d, 1.0f));
    DSS_RETURN_IF_ERROR(g.norm(a + ".q_a_layernorm.weight", c.q_lora_rank, v32));
    DSS_RETURN_IF_ERROR(g.linear(a + ".q_b_proj.weight", H * c.d_qk(), c.q_lora_rank, 1.0f));
    DSS_RETURN_IF_ERROR(
        g.linear(a + ".kv_a_proj_with_mqa.weight", c.kv_lora_rank + c.d_rope, d, 1.0f));
    DSS_RETURN_IF_ERROR(g.norm(a + ".kv_a_layernorm.weight", c.kv_lora_rank, v32));
    DSS_RETURN_IF_ERROR(
        g.linear(a + ".kv_b_proj.weight", H * (c.d_nope + c.d_v), c.kv_lora_rank, 1.0f));
    DSS_RETURN_IF_ERROR(g.linear(a + ".o_proj.weight", d, H * c.d_v, 0.5f));
    if (v32) {  // lightning indexer
      const std::string ix = a + ".indexer";
      const int64_t D = c.index_head_dim;
      DSS_RETURN_IF_ERROR(g.linear(ix + ".wq_b.weight", c.index_n_heads * D, c.q_lora_rank, 1.0f));
      DSS_RETURN_IF_ERROR(g.linear(ix + ".wk.weight", D, d, 1.0f));
      DSS_RETURN_IF_ERROR(g.norm(ix + ".k_norm.weight", D, true));
      DSS_RETURN_IF_ERROR(g.f32_vector(ix + ".k_norm.bias", D, 0.1f));
      DSS_RETURN_IF_ERROR(g.dense_bf16(ix + ".weights_proj.weight", c.index_n_heads, d,
                                       1.0f / std::sqrt(static_cast<float>(d))));
    }
    auto ffn = [&](const std::string& m, int64_t d_ff, float gain_down) -> Status {
      DSS_RETURN_IF_ERROR(g.linear(m + ".gate_proj.weight", d_ff, d, 1.0f));
      DSS_RETURN_IF_ERROR(g.linear(m + ".up_proj.weight", d_ff, d, 1.0f));
      return g.linear(m + ".down_proj.weight", d, d_ff, gain_down);
    };
    if (!c.is_moe_layer(i)) {
      DSS_RETURN_IF_ERROR(ffn(p + ".mlp", c.d_ff, 0.5f));
    } else {
      DSS_RETURN_IF_ERROR(g.dense_bf16(p + ".mlp.gate.weight", c.n_experts, d,
                                       1.0f / std::sqrt(static_cast<float>(d))));
      DSS_RETURN_IF_ERROR(g.f32_vector(p + ".mlp.gate.e_score_correction_bias", c.n_experts, 0.1f));
      for (int32_t e = 0; e < c.n_experts; ++e) {
        DSS_RETURN_IF_ERROR(ffn(p + ".mlp.experts." + std::to_string(e), c.d_ff_expert, 0.5f));
      }
      if (c.n_shared_experts > 0) {
        DSS_RETURN_IF_ERROR(ffn(p + ".mlp.shared_experts",
                                static_cast<int64_t>(c.n_shared_experts) * c.d_ff_expert, 0.5f));
      }
    }
    return Status::ok();
  };
  for (int32_t i = 0; i < c.n_layers; ++i) {
    DSS_RETURN_IF_ERROR(layer(i));
    ++done;
    if (o.progress) o.progress(done, total);
  }
  // The MTP module (deepseek-reference.md 2.8): layer n_layers is a whole decoder block plus
  // enorm / hnorm, eh_proj [d, 2d] and its own copies of the embedding and head (shared_head).
  for (int32_t k = 0; k < c.n_mtp_layers; ++k) {
    const int32_t i = c.n_layers + k;
    const std::string p = "model.layers." + std::to_string(i);
    DSS_RETURN_IF_ERROR(layer(i));
    DSS_RETURN_IF_ERROR(g.norm(p + ".enorm.weight", d, v32));
    DSS_RETURN_IF_ERROR(g.norm(p + ".hnorm.weight", d, v32));
    // eh_proj is a plain BF16 linear in the released checkpoints (SGLang and vLLM load it as an
    // unquantised nn.Linear).
    DSS_RETURN_IF_ERROR(
        g.dense_bf16(p + ".eh_proj.weight", d, 2 * d, 1.0f / std::sqrt(static_cast<float>(2 * d))));
    DSS_RETURN_IF_ERROR(g.dense_bf16(p + ".embed_tokens.weight", c.n_vocab, d, 1.0f));
    DSS_RETURN_IF_ERROR(g.norm(p + ".shared_head.norm.weight", d, v32));
    DSS_RETURN_IF_ERROR(g.dense_bf16(p + ".shared_head.head.weight", c.n_vocab, d,
                                     4.0f / std::sqrt(static_cast<float>(d))));
    ++done;
    if (o.progress) o.progress(done, total);
  }
  return writer.finish();
}

// Long by design: a table of the presets' config.json values.
Result<Json> preset_config(const std::string& name) {
  Json base = {{"architectures", {"DeepseekV3ForCausalLM"}},
               {"model_type", "deepseek_v3"},
               {"vocab_size", 129280},
               {"n_shared_experts", 1},
               {"routed_scaling_factor", 2.5},
               {"scoring_func", "sigmoid"},
               {"topk_method", "noaux_tc"},
               {"norm_topk_prob", true},
               {"moe_layer_freq", 1},
               {"hidden_act", "silu"},
               {"rms_norm_eps", 1e-06},
               {"rope_theta", 10000},
               {"num_nextn_predict_layers", 0},
               {"bos_token_id", 0},
               {"eos_token_id", 1},
               {"tie_word_embeddings", false},
               {"torch_dtype", "bfloat16"},
               {"attention_bias", false},
               {"attention_dropout", 0.0}};
  if (name == "tiny") {  // golden tiny-v3 shapes with the real vocabulary
    base.update({{"hidden_size", 256},
                 {"num_hidden_layers", 4},
                 {"first_k_dense_replace", 1},
                 {"num_attention_heads", 8},
                 {"num_key_value_heads", 8},
                 {"q_lora_rank", 128},
                 {"kv_lora_rank", 64},
                 {"qk_nope_head_dim", 32},
                 {"qk_rope_head_dim", 16},
                 {"v_head_dim", 32},
                 {"intermediate_size", 512},
                 {"moe_intermediate_size", 128},
                 {"n_routed_experts", 16},
                 {"num_experts_per_tok", 4},
                 {"n_group", 4},
                 {"topk_group", 2},
                 {"rope_scaling",
                  {{"type", "yarn"},
                   {"factor", 4},
                   {"original_max_position_embeddings", 1024},
                   {"beta_fast", 32},
                   {"beta_slow", 1},
                   {"mscale", 1.0},
                   {"mscale_all_dim", 1.0}}},
                 {"max_position_embeddings", 4096}});
    return base;
  }
  if (name == "ds-mini") {  // = shared/configs/ds-mini.json
    base.update({{"hidden_size", 1024},
                 {"num_hidden_layers", 12},
                 {"first_k_dense_replace", 1},
                 {"num_attention_heads", 16},
                 {"num_key_value_heads", 16},
                 {"q_lora_rank", 384},
                 {"kv_lora_rank", 256},
                 {"qk_nope_head_dim", 64},
                 {"qk_rope_head_dim", 32},
                 {"v_head_dim", 64},
                 {"intermediate_size", 2816},
                 {"moe_intermediate_size", 512},
                 {"n_routed_experts", 64},
                 {"num_experts_per_tok", 6},
                 {"n_group", 8},
                 {"topk_group", 4},
                 {"rope_scaling",
                  {{"type", "yarn"},
                   {"factor", 4},
                   {"original_max_position_embeddings", 8192},
                   {"beta_fast", 32},
                   {"beta_slow", 1},
                   {"mscale", 1.0},
                   {"mscale_all_dim", 1.0}}},
                 {"max_position_embeddings", 32768}});
    base.erase("attention_bias");
    base.erase("attention_dropout");
    return base;
  }
  if (name == "v3-layers") {  // DeepSeek-V3 671B's own shapes (its config.json), 3 layers
    base.update({{"hidden_size", 7168},
                 {"num_hidden_layers", 3},  // 1 dense + 2 MoE, ~27 GB in FP8 (load-rate tests)
                 {"first_k_dense_replace", 1},
                 {"num_attention_heads", 128},
                 {"num_key_value_heads", 128},
                 {"q_lora_rank", 1536},
                 {"kv_lora_rank", 512},
                 {"qk_nope_head_dim", 128},
                 {"qk_rope_head_dim", 64},
                 {"v_head_dim", 128},
                 {"intermediate_size", 18432},
                 {"moe_intermediate_size", 2048},
                 {"n_routed_experts", 256},
                 {"num_experts_per_tok", 8},
                 {"n_group", 8},
                 {"topk_group", 4},
                 {"rope_scaling",
                  {{"type", "yarn"},
                   {"factor", 40},
                   {"original_max_position_embeddings", 4096},
                   {"beta_fast", 32},
                   {"beta_slow", 1},
                   {"mscale", 1.0},
                   {"mscale_all_dim", 1.0}}},
                 {"max_position_embeddings", 163840}});
    return base;
  }
  if (name == "tiny-v32" || name == "ds-mini-v32") {  // the same shapes as DeepSeek-V3.2
    DSS_ASSIGN_OR_RETURN(Json c, preset_config(name == "tiny-v32" ? "tiny" : "ds-mini"));
    c["architectures"] = {"DeepseekV32ForCausalLM"};
    c["model_type"] = "deepseek_v32";
    if (name ==
        "tiny-v32") {  // as the golden tiny-v32: kv_lora_rank 128 (FP8 latent blocks of 128)
      c.update({{"kv_lora_rank", 128},
                {"index_n_heads", 8},
                {"index_head_dim", 128},
                {"index_topk", 16}});
    } else {
      // ds-mini-v32: 8 indexer heads of 128, top-2048. Not the 671B's 64 heads: there the
      // indexer costs 64 * 128 = 8K multiply-adds per cached token per layer against ~139K for
      // the absorbed MLA (128 heads x (512 + 64 + 512)), about 6%. ds-mini's MLA is only
      // 16 heads x (256 + 32 + 256) = 8.7K, so 64 heads would cost as much as the dense
      // attention DSA exists to avoid; 8 heads (1K, ~12%) keeps the proportion in the same
      // range (conservatively) and matches the golden tiny-v32 (index_n_heads 8).
      c.update({{"index_n_heads", 8}, {"index_head_dim", 128}, {"index_topk", 2048}});
    }
    return c;
  }
  return Status::error("unknown preset '", name,
                       "' (tiny | ds-mini | tiny-v32 | ds-mini-v32 | v3-layers)");
}

}  // namespace dss
