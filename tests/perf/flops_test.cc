// decode_step_flops, prefill_flops and decode_step_bound against counts made by hand. The
// configs are small enough to count every multiply-add from deepseek-reference.md's formulas
// (section 2.3: MLA, absorbed form for decode, naive form for prefill; 2.5: SwiGLU FFNs and
// experts; 2.9: the V3.2 indexer); 2 FLOPs per multiply-add. The counts are in the comments.
#include <gtest/gtest.h>

#include <string>

#include "perf/decode_flops.h"
#include "perf/prefill_flops.h"

namespace dss::perf {
namespace {

// Layer 0 dense, layer 1 MoE. d 8, H 2, q_lora 4, kv_lora (R) 4, d_nope 2, d_rope 2 (d_qk 4),
// d_v 3, d_ff 5, expert d_ff 3, 4 routed experts (2 per token) + 1 shared, vocabulary 10.
ModelConfig tiny_v3() {
  ModelConfig c;
  c.n_vocab = 10;
  c.d_model = 8;
  c.d_ff = 5;
  c.d_ff_expert = 3;
  c.n_layers = 2;
  c.n_dense_layers = 1;
  c.n_heads = 2;
  c.q_lora_rank = 4;
  c.kv_lora_rank = 4;
  c.d_nope = 2;
  c.d_rope = 2;
  c.d_v = 3;
  c.n_experts = 4;
  c.n_shared_experts = 1;
  c.n_experts_per_tok = 2;
  return c;
}

// The same plus a V3.2 indexer: 2 heads of 4, top-2.
ModelConfig tiny_v32() {
  ModelConfig c = tiny_v3();
  c.arch = ModelArch::kDeepseekV32;
  c.index_n_heads = 2;
  c.index_head_dim = 4;
  c.index_topk = 2;
  return c;
}

double part(const StepFlops& f, const std::string& name) {
  for (const auto& [n, v] : f.parts)
    if (n == name) return v;
  ADD_FAILURE() << "no part " << name;
  return -1;
}

// Multiply-adds per token and layer (absorbed MLA):
//   q_a 8*4 = 32, q_b 4*(2*4) = 32, kv_a 8*(4+2) = 48, o (2*3)*8 = 48,
//   W_UK 2*2*4 = 16, W_UV 2*4*3 = 24, per attended position 2*(2*4 + 2) = 20.
// tg3 from an empty cache: the steps attend 1, 2, 3 positions, mean 2 -> 40. Sum 240.
// Dense FFN 3*8*5 = 120; router 8*4 = 32; an expert 3*8*3 = 72 (shared 72, routed 2*72 = 144);
// lm_head 8*10 = 80. FLOPs per step = 2 * b * (MACs summed over the layers).
TEST(DecodeFlops, CountedByHandV3) {
  const StepFlops f = decode_step_flops(tiny_v3(), /*b=*/2, /*n_steps=*/3);
  EXPECT_DOUBLE_EQ(part(f, "attention"), 2 * 2 * (2 * 240));
  EXPECT_DOUBLE_EQ(part(f, "indexer"), 0);
  EXPECT_DOUBLE_EQ(part(f, "dense_ffn"), 2 * 2 * 120);
  EXPECT_DOUBLE_EQ(part(f, "router"), 2 * 2 * 32);
  EXPECT_DOUBLE_EQ(part(f, "shared_experts"), 2 * 2 * 72);
  EXPECT_DOUBLE_EQ(part(f, "routed_experts"), 2 * 2 * 144);
  EXPECT_DOUBLE_EQ(part(f, "lm_head"), 2 * 2 * 80);
  EXPECT_DOUBLE_EQ(f.total, 1920 + 480 + 128 + 288 + 576 + 320);
  ASSERT_EQ(f.parts.size(), 7u);  // ActiveBytes' names for the parts that compute, in order
  EXPECT_EQ(f.parts.front().first, "attention");
  EXPECT_EQ(f.parts.back().first, "lm_head");
}

// V3.2, b 3, tg3: the steps attend min(i + 1, top-2) = 1, 2, 2 positions (mean 5/3); only the
// last step (3 cached > top-2) runs the indexer's scores, over 3 positions (mean 1).
// Attention per token and layer: 200 + 20 * 5/3. Indexer: wq_b 4*(2*4) = 32, wk 8*4 = 32,
// weights_proj 8*2 = 16, scores 1 * 2*4 = 8 -> 88.
TEST(DecodeFlops, CountedByHandV32) {
  const StepFlops f = decode_step_flops(tiny_v32(), /*b=*/3, /*n_steps=*/3);
  EXPECT_NEAR(part(f, "attention"), 2 * 3 * 2 * (200 + 20 * 5.0 / 3), 1e-9);  // 2800
  EXPECT_DOUBLE_EQ(part(f, "indexer"), 2 * 3 * 2 * 88);                       // 1056
  EXPECT_DOUBLE_EQ(part(f, "dense_ffn"), 2 * 3 * 120);
  EXPECT_DOUBLE_EQ(part(f, "router"), 2 * 3 * 32);
  EXPECT_DOUBLE_EQ(part(f, "shared_experts"), 2 * 3 * 72);
  EXPECT_DOUBLE_EQ(part(f, "routed_experts"), 2 * 3 * 144);
  EXPECT_DOUBLE_EQ(part(f, "lm_head"), 2 * 3 * 80);
  EXPECT_NEAR(f.total, 2800 + 1056 + 720 + 192 + 432 + 864 + 480, 1e-9);
}

// pp3 (naive MLA over one chunk), per layer: projections 3 tokens * (32 + 32 + 48 + 48) = 480;
// kv_b expands 3 positions * 4*2*(2+3) = 120; causal pairs 1 + 2 + 3 = 6, each 2*(4+3) = 14
// -> 84. Layer 0's FFN 3 * 120 = 360; layer 1's MoE 3 * (32 + (2 + 1) * 72) = 744; lm_head
// for the last token only, 80. MACs 2 * (480 + 120 + 84) + 360 + 744 + 80 = 2552.
TEST(PrefillFlops, CountedByHandV3) {
  EXPECT_DOUBLE_EQ(prefill_flops(tiny_v3(), 3), 2 * 2552.0);
  // One token: projections 160, kv_b 40, one pair 14, FFN 120, MoE 248, lm_head 80.
  EXPECT_DOUBLE_EQ(prefill_flops(tiny_v3(), 1), 2 * (2 * (160 + 40 + 14) + 120 + 248 + 80.0));
}

// V3.2 pp3: the pairs attended are min(t + 1, 2) = 1 + 2 + 2 = 5 (x 14 = 70); the indexer scores
// only where it selects, token 2's 3 positions (x 2*4 = 24); its projections add 3 * 80 = 240
// per layer. MACs 2 * (480 + 240 + 120 + 70 + 24) + 360 + 744 + 80 = 3052.
TEST(PrefillFlops, CountedByHandV32) { EXPECT_DOUBLE_EQ(prefill_flops(tiny_v32(), 3), 2 * 3052.0); }

TEST(PrefillFlops, ProjectionMacs) {
  EXPECT_DOUBLE_EQ(attention_projection_macs(tiny_v3()), 32 + 32 + 48 + 48);
  ModelConfig no_q_lora = tiny_v3();
  no_q_lora.q_lora_rank = 0;  // q = W_q x: 8 * (2*4) = 64
  EXPECT_DOUBLE_EQ(attention_projection_macs(no_q_lora), 64 + 48 + 48);
  EXPECT_DOUBLE_EQ(indexer_projection_macs(tiny_v3()), 0);
  EXPECT_DOUBLE_EQ(indexer_projection_macs(tiny_v32()), 32 + 32 + 16);
}

// At 1000 B/s and 1000 FLOP/s (read_gbps = peak_gflops = 1e-6) each phase takes
// max(bytes, flops) / 1000 s:
//   attention max(1000, 3000) = 3 s; router max(50, 20) = 0.05 s;
//   experts (shared + routed) max(200 + 300, 100 + 2000) = 2.1 s; lm_head max(400, 100) = 0.4 s;
//   other (embedding + norms, bytes only) 0.11 s; indexer and dense_ffn are empty and left out.
TEST(DecodeStepBound, SlowerOfBytesAndFlopsPerPhase) {
  const std::vector<std::pair<std::string, double>> bytes = {
      {"embedding", 100},      {"attention", 1000}, {"indexer", 0},
      {"dense_ffn", 0},        {"router", 50},      {"shared_experts", 200},
      {"routed_experts", 300}, {"norms", 10},       {"lm_head", 400}};
  StepFlops f;
  f.parts = {{"attention", 3000},     {"indexer", 0},           {"dense_ffn", 0}, {"router", 20},
             {"shared_experts", 100}, {"routed_experts", 2000}, {"lm_head", 100}};
  const StepBound b = decode_step_bound(bytes, f, 1e-6, 1e-6);
  ASSERT_EQ(b.phases.size(), 5u);
  const char* names[] = {"attention", "router", "experts", "lm_head", "other"};
  const double bytes_s[] = {1.0, 0.05, 0.5, 0.4, 0.11};
  const double flops_s[] = {3.0, 0.02, 2.1, 0.1, 0.0};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(b.phases[i].name, names[i]);
    EXPECT_NEAR(b.phases[i].bytes_s, bytes_s[i], 1e-12) << names[i];
    EXPECT_NEAR(b.phases[i].flops_s, flops_s[i], 1e-12) << names[i];
  }
  EXPECT_NEAR(b.seconds, 3 + 0.05 + 2.1 + 0.4 + 0.11, 1e-12);
}

}  // namespace
}  // namespace dss::perf
