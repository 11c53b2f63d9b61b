// active_bytes_per_token against the tensors of generated checkpoints: the expected bytes are
// summed from the safetensors files themselves (each tensor's stored bytes, its FP8 scale tensor
// included), by tensor name as deepseek-reference.md section 3.2 lists them, independently of
// how the model loads or lays out its weights. Then step_bytes / step_parts against the same.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <numeric>
#include <string>

#include "io/checkpoint.h"
#include "model/deepseek/random_checkpoint.h"
#include "model/runtime/model.h"
#include "perf/active_bytes.h"

namespace dss::perf {
namespace {

namespace fs = std::filesystem;

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

// The layer of "model.layers.L.*", or -1.
int layer_of(const std::string& name) {
  const std::string p = "model.layers.";
  if (name.rfind(p, 0) != 0) return -1;
  return std::stoi(name.substr(p.size()));
}

// Batch-1 bytes per part, from the checkpoint's tensor sizes alone.
std::map<std::string, int64_t> expected_parts(const Checkpoint& ck, const ModelConfig& c) {
  std::map<std::string, int64_t> e;
  auto bytes = [&](const std::string& n) { return static_cast<int64_t>(ck.get(n)->n_bytes); };
  // One embedding row: the table's bytes / n_vocab (+ one row of its scales, when it has any).
  e["embedding"] = bytes("model.embed_tokens.weight") / c.n_vocab;
  if (ck.has("model.embed_tokens.weight_scale_inv")) {
    const TensorView s = *ck.get("model.embed_tokens.weight_scale_inv");
    e["embedding"] += static_cast<int64_t>(s.n_bytes) / s.shape[0];
  }
  for (const std::string& n : ck.names()) {
    const int l = layer_of(n);
    if (n == "lm_head.weight" || n == "lm_head.weight_scale_inv") {
      e["lm_head"] += bytes(n);
    } else if (n == "model.norm.weight" || has(n, "input_layernorm") ||
               has(n, "post_attention_layernorm")) {
      e["norms"] += bytes(n);
    } else if (has(n, ".self_attn.indexer.")) {
      e["indexer"] += bytes(n);
    } else if (has(n, ".self_attn.")) {
      e["attention"] += bytes(n);
    } else if (l >= 0 && !c.is_moe_layer(l) && has(n, ".mlp.")) {
      e["dense_ffn"] += bytes(n);
    } else if (has(n, ".mlp.gate.")) {  // router weight and e_score_correction_bias
      e["router"] += bytes(n);
    } else if (has(n, ".mlp.shared_experts.")) {
      e["shared_experts"] += bytes(n);
    } else if (has(n, ".mlp.experts.0.")) {  // every expert has this shape; k are read
      e["routed_experts"] += c.n_experts_per_tok * bytes(n);
    }
  }
  return e;
}

class ActiveBytesTest : public ::testing::TestWithParam<std::tuple<const char*, bool>> {
 protected:
  void SetUp() override {
    const auto [preset, fp8] = GetParam();
    dir_ = fs::temp_directory_path() /
           ("dss_active_bytes_" + std::to_string(::getpid()) + "_" + preset + (fp8 ? "_fp8" : ""));
    fs::remove_all(dir_);
    auto cfg = preset_config(preset);
    ASSERT_TRUE(cfg.is_ok());
    (*cfg)["vocab_size"] = 512;
    RandomCheckpointOptions o;
    o.out_dir = dir_.string();
    o.seed = 3;
    o.fp8 = fp8;
    ASSERT_TRUE(write_random_checkpoint(*cfg, o).is_ok());
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_P(ActiveBytesTest, PartsAreTheCheckpointsTensorBytes) {
  auto model = Model::load(LoadOptions{dir_.string()});
  ASSERT_TRUE(model.is_ok()) << model.message();
  auto ck = Checkpoint::open(dir_.string());
  ASSERT_TRUE(ck.is_ok()) << ck.message();
  const ModelConfig& c = (*model)->config();
  const ActiveBytes a = active_bytes_per_token((*model)->weights(), c.n_experts_per_tok);
  std::map<std::string, int64_t> want = expected_parts(*ck, c);

  const char* order[] = {"embedding",      "attention",      "indexer", "dense_ffn", "router",
                         "shared_experts", "routed_experts", "norms",   "lm_head"};
  ASSERT_EQ(a.parts.size(), std::size(order));
  int64_t total = 0;
  for (size_t i = 0; i < a.parts.size(); ++i) {
    EXPECT_EQ(a.parts[i].first, order[i]);
    EXPECT_EQ(a.parts[i].second, want[order[i]]) << order[i];
    total += want[order[i]];
  }
  EXPECT_EQ(a.total, total);
  const int32_t n_moe = c.n_layers - c.n_dense_layers;
  EXPECT_EQ(a.n_moe_layers, n_moe);
  EXPECT_EQ(a.routed_bytes, want["routed_experts"]);
  EXPECT_EQ(a.routed_expert_bytes * c.n_experts_per_tok * n_moe, want["routed_experts"]);
  EXPECT_EQ(want["indexer"] > 0, c.index_topk > 0);
}

// A step that reads r routed experts: the batch-1 bytes with the routed part replaced by
// r * one expert's; at batch 1 (r = n_moe_layers * k) it is the total.
TEST_P(ActiveBytesTest, StepBytesReplaceTheRoutedPart) {
  auto model = Model::load(LoadOptions{dir_.string()});
  ASSERT_TRUE(model.is_ok()) << model.message();
  const ModelConfig& c = (*model)->config();
  const ActiveBytes a = active_bytes_per_token((*model)->weights(), c.n_experts_per_tok);
  const double bs1 = static_cast<double>(a.n_moe_layers) * c.n_experts_per_tok;
  EXPECT_DOUBLE_EQ(a.step_bytes(bs1), static_cast<double>(a.total));
  const double reads = 2.5 * bs1;  // a batch that reads 2.5x the experts of one token
  const double routed = reads * static_cast<double>(a.routed_expert_bytes);
  EXPECT_DOUBLE_EQ(a.step_bytes(reads), static_cast<double>(a.total - a.routed_bytes) + routed);
  double sum = 0;
  for (const auto& [part, b] : a.step_parts(reads)) {
    sum += b;
    if (part == "routed_experts") {
      EXPECT_DOUBLE_EQ(b, routed);
    }
  }
  EXPECT_DOUBLE_EQ(sum, a.step_bytes(reads));
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, ActiveBytesTest,
                         ::testing::Values(std::make_tuple("tiny", true),
                                           std::make_tuple("tiny", false),
                                           std::make_tuple("tiny-v32", true)),
                         [](const ::testing::TestParamInfo<ActiveBytesTest::ParamType>& info) {
                           std::string name = std::string(std::get<0>(info.param)) +
                                              (std::get<1>(info.param) ? "_fp8" : "_bf16");
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace dss::perf
