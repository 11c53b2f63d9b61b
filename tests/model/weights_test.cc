// load_weights' derived tensors: MlaWeights::w_uk_t (W_UK of every head transposed, for the
// absorbed decode query) holds exactly kv_b's values, for every way the weights can be loaded:
// FP8 as stored (codes and block scales moved) row-major and tiled, FP8 whose heads cannot keep
// their own scale blocks (F32 values), and converted at load to BF16 (elements moved) and INT8
// (per-row scales cannot follow a transpose: F32 values). And the arena: every converted or
// tiled matrix lives in ModelWeights::arena after load with the values it had, the data in use
// order back to back (an expert's gate, up, down; q_a then kv_a), every scale block after them;
// with bf16_dot, the bf16-dot matrices re-laid out as kTiledPairs (the router and indexer not).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/deepseek/quant_policy.h"
#include "model/deepseek/weights.h"
#include "tensor/tiled_layout.h"

namespace dss {
namespace {

void expect_uk_transposed(const std::string& name, const QuantPolicy* convert, bool tile,
                          DType want_dtype, bool bf16_dot = false) {
  SCOPED_TRACE(name + (tile ? " tiled" : " row-major") + (bf16_dot ? " bf16-dot" : ""));
  const std::string dir = std::string(DSS_TEST_DATA) + "/golden/" + name;
  auto cfg = ModelConfig::load(dir);
  ASSERT_TRUE(cfg.is_ok()) << cfg.status().message();
  auto ck = Checkpoint::open(dir);
  ASSERT_TRUE(ck.is_ok()) << ck.status().message();
  auto w = load_weights(*ck, *cfg, convert, tile, nullptr, bf16_dot);
  ASSERT_TRUE(w.is_ok()) << w.status().message();
  const int64_t H = cfg->n_heads, R = cfg->kv_lora_rank, dn = cfg->d_nope;
  const int64_t d_kv = cfg->d_nope + cfg->d_v;
  for (const LayerWeights& L : w->layers) {
    const Matrix& uk = L.mla.w_uk_t;
    ASSERT_EQ(uk.dtype, want_dtype);
    ASSERT_EQ(uk.n_rows, H * R);
    ASSERT_EQ(uk.n_cols, dn);
    // Tiled like the other weights; F32 has no tiled kernel layout (tensor/tiled_layout.h).
    // bf16-dot: FP8 / BF16 pair-tiled (d_nope is even).
    const bool tiled = tile && want_dtype != DType::kF32;
    const WeightLayout want = !tiled     ? WeightLayout::kRowMajor
                              : bf16_dot ? WeightLayout::kTiledPairs
                                         : WeightLayout::kTiled;
    EXPECT_EQ(uk.layout, want);
    EXPECT_EQ(uk.arith, tiled && bf16_dot ? MatmulArith::kBf16Dot : MatmulArith::kF32);
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
  expect_uk_transposed("tiny-v32", nullptr, true, DType::kF8E4M3, true);
  expect_uk_transposed("tiny-v3", nullptr, true, DType::kF32, true);
  QuantPolicy bf16;
  bf16.to = DType::kBF16;
  expect_uk_transposed("tiny-v3", &bf16, true, DType::kBF16);
  expect_uk_transposed("tiny-v3", &bf16, true, DType::kBF16, true);
  QuantPolicy int8;
  int8.to = DType::kI8;
  expect_uk_transposed("tiny-v3", &int8, false, DType::kF32);
}

std::vector<Matrix*> matrices(ModelWeights& w) {
  std::vector<Matrix*> v;
  for_each_matrix(w, [&](Matrix& m) { v.push_back(&m); });
  return v;
}

// Loads `name` twice, row-major on the mapping (`convert` applied: those copies are owned too)
// and tiled (`bf16_dot`: for MatmulArith::kBf16Dot), and checks the second's views: every tiled
// or converted one inside the arena (data and scales), nothing left in `owned`, every element
// equal to the first's; with bf16_dot, every FP8 / BF16 tiled matrix but the router and the
// indexer's kBf16Dot and pair-tiled (the ds checkpoints' column counts are all even).
void expect_arena_holds_weights(const std::string& name, const QuantPolicy* convert,
                                bool bf16_dot = false) {
  SCOPED_TRACE(name + (convert ? " converted" : "") + (bf16_dot ? " bf16-dot" : ""));
  const std::string dir = std::string(DSS_TEST_DATA) + "/golden/" + name;
  auto cfg = ModelConfig::load(dir);
  ASSERT_TRUE(cfg.is_ok()) << cfg.status().message();
  auto ck = Checkpoint::open(dir);
  ASSERT_TRUE(ck.is_ok()) << ck.status().message();
  auto ref = load_weights(*ck, *cfg, convert, false);
  auto w = load_weights(*ck, *cfg, convert, true, nullptr, bf16_dot);
  ASSERT_TRUE(ref.is_ok() && w.is_ok());
  // Views that stay f32 arithmetic: the router and the V3.2 indexer (and the row-major embedding).
  std::vector<const Matrix*> f32_views = {&w->embed};
  int64_t n_paired = 0;
  for (const LayerWeights& L : w->layers) {
    if (L.is_moe) f32_views.push_back(&L.moe.router);
    if (L.mla.has_indexer) {
      for (const Matrix* m : {&L.mla.indexer.wk, &L.mla.indexer.wq_b, &L.mla.indexer.weights_proj})
        f32_views.push_back(m);
    }
  }
  for (Matrix* m : matrices(*w)) {
    const bool f32 = std::find(f32_views.begin(), f32_views.end(), m) != f32_views.end();
    const bool pairable = m->layout != WeightLayout::kRowMajor &&
                          (m->dtype == DType::kF8E4M3 || m->dtype == DType::kBF16);
    const bool want_pairs = bf16_dot && !f32 && pairable;
    EXPECT_EQ(m->layout == WeightLayout::kTiledPairs, want_pairs) << dtype_name(m->dtype);
    EXPECT_EQ(m->arith == MatmulArith::kBf16Dot, want_pairs) << dtype_name(m->dtype);
    n_paired += want_pairs ? 1 : 0;
  }
  EXPECT_EQ(n_paired > 0, bf16_dot);
  EXPECT_TRUE(w->owned.empty());
  const uint8_t* lo = w->arena.data();
  const uint8_t* hi = lo + w->arena.size();
  auto inside = [&](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    return b >= lo && b + n <= hi;
  };
  // Data back to back in use order, scales after: an expert's up starts where its gate ends
  // (64-byte aligned), its down where its up ends, and q_a is followed by kv_a.
  auto ends_at = [](const Matrix& m, const Matrix& next) {
    const size_t n = (m.data_bytes() + 63) / 64 * 64;
    return static_cast<const uint8_t*>(m.data) + n == static_cast<const uint8_t*>(next.data);
  };
  int64_t n_experts_checked = 0;
  for (const LayerWeights& L : w->layers) {
    EXPECT_TRUE(ends_at(L.mla.q_a, L.mla.kv_a));
    if (!L.is_moe) continue;
    for (const FfnWeights& e : L.moe.experts) {
      EXPECT_TRUE(ends_at(e.gate, e.up));
      EXPECT_TRUE(ends_at(e.up, e.down));
      ++n_experts_checked;
    }
  }
  EXPECT_GT(n_experts_checked, 0);
  const std::vector<Matrix*> a = matrices(*ref), b = matrices(*w);
  ASSERT_EQ(a.size(), b.size());
  int64_t n_in_arena = 0;
  const uint8_t *data_end = lo, *scales_begin = hi;  // every matrix's data before any scales
  for (size_t i = 0; i < a.size(); ++i) {
    const Matrix& x = *a[i];
    const Matrix& y = *b[i];
    if (y.empty()) continue;
    const bool owned = y.layout != WeightLayout::kRowMajor || x.data != y.data;
    if (owned) {
      ++n_in_arena;
      EXPECT_TRUE(inside(y.data, static_cast<size_t>(y.data_bytes()))) << i;
      if (y.dtype == DType::kF8E4M3) {
        EXPECT_TRUE(inside(y.scales, static_cast<size_t>(y.n_scale_rows() * y.n_scale_cols()) * 4))
            << i;
      }
      if (y.dtype == DType::kI8) {
        EXPECT_TRUE(inside(y.scales, static_cast<size_t>(y.n_rows) * 4)) << i;
      }
    }
    ASSERT_EQ(x.dtype, y.dtype) << i;
    if (owned) {
      data_end = std::max(data_end, static_cast<const uint8_t*>(y.data) + y.data_bytes());
      if (y.scales != nullptr)
        scales_begin = std::min(scales_begin, reinterpret_cast<const uint8_t*>(y.scales));
    }
    ASSERT_EQ(x.n_rows, y.n_rows) << i;
    ASSERT_EQ(x.n_cols, y.n_cols) << i;
    for (int64_t r = 0; r < x.n_rows; ++r) {
      for (int64_t c = 0; c < x.n_cols; ++c) ASSERT_EQ(x.at(r, c), y.at(r, c)) << i << " " << r;
    }
  }
  EXPECT_GT(n_in_arena, 0);
  EXPECT_LE(data_end, scales_begin);
}

TEST(Weights, TiledAndConvertedCopiesLiveInTheArena) {
  expect_arena_holds_weights("tiny-v3", nullptr);
  expect_arena_holds_weights("tiny-v32", nullptr);
  expect_arena_holds_weights("tiny-v3", nullptr, true);
  expect_arena_holds_weights("tiny-v32", nullptr, true);
  QuantPolicy bf16;
  bf16.to = DType::kBF16;
  expect_arena_holds_weights("tiny-v3", &bf16);
  expect_arena_holds_weights("tiny-v3", &bf16, true);
  QuantPolicy int8;
  int8.to = DType::kI8;
  expect_arena_holds_weights("tiny-v3", &int8);
}

// place_weights over a pool (chunks in any order on any thread) lays out the arena byte for byte
// as on one thread, with the same layout and arithmetic per view.
TEST(Weights, PlacementOverAPoolEqualsOneThread) {
  ThreadPool pool(3);
  for (const char* name : {"tiny-v3", "tiny-v32"}) {
    for (bool bf16_dot : {false, true}) {
      SCOPED_TRACE(std::string(name) + (bf16_dot ? " bf16-dot" : ""));
      const std::string dir = std::string(DSS_TEST_DATA) + "/golden/" + name;
      auto cfg = ModelConfig::load(dir);
      auto ck = Checkpoint::open(dir);
      ASSERT_TRUE(cfg.is_ok() && ck.is_ok());
      auto one = load_weights(*ck, *cfg, nullptr, true, nullptr, bf16_dot);
      auto par = load_weights(*ck, *cfg, nullptr, true, nullptr, bf16_dot, {}, {}, &pool);
      ASSERT_TRUE(one.is_ok() && par.is_ok());
      ASSERT_EQ(one->arena.size(), par->arena.size());
      EXPECT_EQ(std::memcmp(one->arena.data(), par->arena.data(), one->arena.size()), 0);
      const std::vector<Matrix*> a = matrices(*one), b = matrices(*par);
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i]->layout, b[i]->layout) << i;
        EXPECT_EQ(a[i]->arith, b[i]->arith) << i;
        const bool in_arena =
            a[i]->data >= one->arena.data() && a[i]->data < one->arena.data() + one->arena.size();
        if (!in_arena) {
          EXPECT_EQ(a[i]->data, b[i]->data) << i;  // the same view of the mapping
          continue;
        }
        EXPECT_EQ(static_cast<const uint8_t*>(a[i]->data) - one->arena.data(),
                  static_cast<const uint8_t*>(b[i]->data) - par->arena.data())
            << i;
      }
    }
  }
}

// tile_rows_into over disjoint tile ranges writes what tile_matrix writes for the whole matrix,
// in both layouts and element sizes, a ragged last tile included (its padding rows zero).
TEST(Weights, TileRowsIntoRangesEqualWholeTiling) {
  for (DType dt : {DType::kF8E4M3, DType::kBF16}) {
    const int64_t rows = 75, cols = 10;  // 3 tiles, the last with 11 rows
    std::vector<uint8_t> data(static_cast<size_t>(rows * cols) * dtype_size(dt));
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>((i * 37 + 11) & 0x7e);
    std::vector<float> scales(1, 0.5f);
    const Matrix m{dt, rows, cols, data.data(), dt == DType::kF8E4M3 ? scales.data() : nullptr};
    for (WeightLayout to : {WeightLayout::kTiled, WeightLayout::kTiledPairs}) {
      const OwnedMatrix whole = tile_matrix(m, to);
      std::vector<uint8_t> parts(whole.data.size(), 0xcd);
      tile_rows_into(m, to, 2, 3, parts.data());
      tile_rows_into(m, to, 0, 2, parts.data());
      EXPECT_EQ(parts, whole.data) << dtype_name(dt) << " layout " << static_cast<int>(to);
    }
  }
}

}  // namespace
}  // namespace dss
