// Tensor- and expert-parallel loading (model/deepseek/shard.h) against the whole model loaded in
// one piece: on tiny-v3 (FP8 with 128 x 128 scale blocks, heads of 48 q_b rows, so some slices
// cut scale blocks and are dequantised) every rank of a 2- and 4-rank group holds exactly the
// whole model's values of its heads (q_b, kv_b rows, o columns, W_UK^T), its FFN rows / columns,
// its vocabulary rows and (expert parallel) its whole experts and no others; the ranks' slices
// tile the whole matrices. check_shardable names the key that does not divide.
#include <gtest/gtest.h>

#include <string>

#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/deepseek/shard.h"
#include "model/deepseek/weights.h"

namespace dss {
namespace {

const std::string kDir = std::string(DSS_TEST_DATA) + "/golden/tiny-v3";

// part[r - r0, c - c0] == whole[r, c] over part's shape.
void expect_part(const Matrix& whole, const Matrix& part, int64_t r0, int64_t c0,
                 const char* what) {
  SCOPED_TRACE(what);
  ASSERT_NE(part.data, nullptr);
  ASSERT_LE(r0 + part.n_rows, whole.n_rows);
  ASSERT_LE(c0 + part.n_cols, whole.n_cols);
  for (int64_t r = 0; r < part.n_rows; ++r) {
    for (int64_t c = 0; c < part.n_cols; ++c) {
      ASSERT_EQ(part.at(r, c), whole.at(r0 + r, c0 + c)) << r << ", " << c;
    }
  }
}

TEST(Shard, EveryRankHoldsTheWholeModelsValuesOfItsPart) {
  auto cfg = ModelConfig::load(kDir);
  ASSERT_TRUE(cfg.is_ok());
  auto ck = Checkpoint::open(kDir);
  ASSERT_TRUE(ck.is_ok());
  auto whole = load_weights(*ck, *cfg);
  ASSERT_TRUE(whole.is_ok()) << whole.message();
  const ModelConfig& c = *cfg;
  for (int32_t size : {2, 4}) {
    for (bool ep : {false, true}) {
      int64_t vocab_rows = 0, head_count = 0, experts_held = 0;
      for (int32_t rank = 0; rank < size; ++rank) {
        SCOPED_TRACE(testing::Message() << "rank " << rank << " of " << size << (ep ? " ep" : ""));
        const ShardSpec s{rank, size, ep};
        auto w = load_weights(*ck, c, nullptr, false, nullptr, false, {}, s);
        ASSERT_TRUE(w.is_ok()) << w.message();
        ASSERT_EQ(w->vocab_begin, s.begin(c.n_vocab));
        expect_part(whole->embed, w->embed, w->vocab_begin, 0, "embed");
        expect_part(whole->lm_head, w->lm_head, w->vocab_begin, 0, "lm_head");
        vocab_rows += w->lm_head.n_rows;
        const int64_t H = c.n_heads / size, h0 = s.begin(c.n_heads);
        head_count += H;
        for (size_t i = 0; i < w->layers.size(); ++i) {
          const LayerWeights &L = w->layers[i], &W = whole->layers[i];
          ASSERT_EQ(L.mla.n_heads, H);
          expect_part(W.mla.q_b, L.mla.q_b, h0 * c.d_qk(), 0, "q_b");
          expect_part(W.mla.kv_b, L.mla.kv_b, h0 * (c.d_nope + c.d_v), 0, "kv_b");
          expect_part(W.mla.o, L.mla.o, 0, h0 * c.d_v, "o");
          expect_part(W.mla.w_uk_t, L.mla.w_uk_t, h0 * c.kv_lora_rank, 0, "w_uk_t");
          expect_part(W.mla.q_a, L.mla.q_a, 0, 0, "q_a (replicated)");
          if (!L.is_moe) {
            const int64_t f0 = s.begin(c.d_ff);
            expect_part(W.dense.gate, L.dense.gate, f0, 0, "dense gate");
            expect_part(W.dense.down, L.dense.down, 0, f0, "dense down");
            ASSERT_EQ(L.dense.up.n_rows, c.d_ff / size);
            continue;
          }
          expect_part(W.moe.router, L.moe.router, 0, 0, "router (replicated)");
          const int64_t fs = int64_t{c.n_shared_experts} * c.d_ff_expert;
          expect_part(W.moe.shared.up, L.moe.shared.up, s.begin(fs), 0, "shared up");
          expect_part(W.moe.shared.down, L.moe.shared.down, 0, s.begin(fs), "shared down");
          for (int32_t e = 0; e < c.n_experts; ++e) {
            const FfnWeights& f = L.moe.experts[static_cast<size_t>(e)];
            const FfnWeights& F = W.moe.experts[static_cast<size_t>(e)];
            const bool mine = e >= L.moe.expert_begin && e < L.moe.expert_end;
            if (ep) {
              if (!mine) {
                EXPECT_EQ(f.gate.data, nullptr) << "expert " << e << " is another rank's";
                continue;
              }
              if (i == 1) ++experts_held;
              expect_part(F.gate, f.gate, 0, 0, "expert gate (whole)");
              expect_part(F.down, f.down, 0, 0, "expert down (whole)");
            } else {
              ASSERT_TRUE(mine);
              const int64_t f0 = s.begin(c.d_ff_expert);
              expect_part(F.gate, f.gate, f0, 0, "expert gate rows");
              expect_part(F.down, f.down, 0, f0, "expert down columns");
            }
          }
        }
      }
      EXPECT_EQ(vocab_rows, c.n_vocab);
      EXPECT_EQ(head_count, c.n_heads);
      if (ep) {
        EXPECT_EQ(experts_held, c.n_experts);
      }
    }
  }
}

TEST(Shard, CheckShardableNamesTheKey) {
  auto cfg = ModelConfig::load(kDir);
  ASSERT_TRUE(cfg.is_ok());
  EXPECT_TRUE(check_shardable(*cfg, ShardSpec{0, 4, false}).is_ok());
  Status heads = check_shardable(*cfg, ShardSpec{0, 3, false});
  ASSERT_FALSE(heads.is_ok());
  EXPECT_EQ(heads.message(), "num_attention_heads = 8 is not divisible by --tp-size 3");
  ModelConfig odd = *cfg;
  odd.n_experts = 6;
  Status experts = check_shardable(odd, ShardSpec{1, 4, true});
  ASSERT_FALSE(experts.is_ok());
  EXPECT_EQ(experts.message(), "n_routed_experts = 6 is not divisible by --ep-size 4");
  EXPECT_TRUE(check_shardable(odd, ShardSpec{1, 4, false}).is_ok());  // experts split by rows
}

}  // namespace
}  // namespace dss
