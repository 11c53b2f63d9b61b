// load_weights' derived tensors: MlaWeights::w_uk_t (W_UK of every head transposed, for the
// absorbed decode query) holds exactly kv_b's values, for every way the weights can be loaded:
// FP8 as stored (codes and block scales moved) row-major and tiled, FP8 whose heads cannot keep
// their own scale blocks (F32 values), and converted at load to BF16 (elements moved) and INT8
// (per-row scales cannot follow a transpose: F32 values).
#include <gtest/gtest.h>

#include <string>

#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/deepseek/quant_policy.h"
#include "model/deepseek/weights.h"

namespace dss {
namespace {

void expect_uk_transposed(const std::string& name, const QuantPolicy* convert, bool tile,
                          DType want_dtype) {
  SCOPED_TRACE(name + (tile ? " tiled" : " row-major"));
  const std::string dir = std::string(DSS_TEST_DATA) + "/golden/" + name;
  auto cfg = ModelConfig::load(dir);
  ASSERT_TRUE(cfg.is_ok()) << cfg.status().message();
  auto ck = Checkpoint::open(dir);
  ASSERT_TRUE(ck.is_ok()) << ck.status().message();
  auto w = load_weights(*ck, *cfg, convert, tile);
  ASSERT_TRUE(w.is_ok()) << w.status().message();
  const int64_t H = cfg->n_heads, R = cfg->kv_lora_rank, dn = cfg->d_nope;
  const int64_t d_kv = cfg->d_nope + cfg->d_v;
  for (const LayerWeights& L : w->layers) {
    const Matrix& uk = L.mla.w_uk_t;
    ASSERT_EQ(uk.dtype, want_dtype);
    ASSERT_EQ(uk.n_rows, H * R);
    ASSERT_EQ(uk.n_cols, dn);
    // Tiled like the other weights; F32 has no tiled kernel layout (tensor/tiled_layout.h).
    const bool tiled = tile && want_dtype != DType::kF32;
    EXPECT_EQ(uk.layout, tiled ? WeightLayout::kTiled : WeightLayout::kRowMajor);
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t c = 0; c < R; ++c) {
        for (int64_t j = 0; j < dn; ++j)
          ASSERT_EQ(uk.at(h * R + c, j), L.mla.kv_b.at(h * d_kv + j, c))
              << h << " " << c << " " << j;
      }
    }
  }
}

TEST(Weights, UkTransposedHoldsKvBValues) {
  // tiny-v32 (kv_lora_rank 128): a 128-row block of the transpose is one head's: FP8 kept.
  // tiny-v3 (kv_lora_rank 64): a block would hold two heads with their own scales: F32.
  for (bool tile : {false, true}) {
    expect_uk_transposed("tiny-v32", nullptr, tile, DType::kF8E4M3);
    expect_uk_transposed("tiny-v3", nullptr, tile, DType::kF32);
  }
  QuantPolicy bf16;
  bf16.to = DType::kBF16;
  expect_uk_transposed("tiny-v3", &bf16, true, DType::kBF16);
  QuantPolicy int8;
  int8.to = DType::kI8;
  expect_uk_transposed("tiny-v3", &int8, false, DType::kF32);
}

}  // namespace
}  // namespace dss
