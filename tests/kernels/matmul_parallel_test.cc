// cpu::matmul_parallel (kernels/cpu/matmul_parallel.h) against one single-threaded matmul call of
// the same matrix: bit-identical for token counts on both sides of the chunked split
// (kMatmulSplitTokens) and not multiples of the chunk, row counts not multiples of a scale block,
// on the tiled FP8 / BF16 layouts (float32 and, where the CPU has AVX512-BF16, bf16-dot
// arithmetic) and the row-major FP8 layout; and every element written.
#include "kernels/cpu/matmul_parallel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "base/rng.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul.h"
#include "tensor/tiled_layout.h"
#include "tests/kernels/random_matrix.h"

namespace dss::cpu {
namespace {

void expect_parallel_equals_single(const Matrix& m, ThreadPool& pool, Rng& rng, const char* what) {
  for (int64_t n_tok : {1, 5, 17, 95, 96, 97, 200, 301}) {
    std::vector<float> x(static_cast<size_t>(n_tok * m.n_cols));
    for (auto& v : x) v = rng.normal();
    std::vector<float> one(static_cast<size_t>(n_tok * m.n_rows));
    std::vector<float> par(one.size(), std::numeric_limits<float>::quiet_NaN());
    matmul(m, x.data(), n_tok, one.data());
    matmul_parallel(pool, m, x.data(), n_tok, par.data());
    for (size_t i = 0; i < one.size(); ++i) {
      ASSERT_FALSE(std::isnan(par[i])) << what << " tokens " << n_tok << " element " << i;
      ASSERT_EQ(par[i], one[i]) << what << " tokens " << n_tok << " token "
                                << static_cast<int64_t>(i) / m.n_rows << " row "
                                << static_cast<int64_t>(i) % m.n_rows;
    }
  }
}

TEST(MatmulParallel, EqualsOneCallForAnyTokenCount) {
  ThreadPool pool(3);
  Rng rng(77);
  for (DType dt : {DType::kF8E4M3, DType::kBF16}) {
    // 40: fewer tiles than parts; 1560: block grain; 6200: guided claims (at 3 threads)
    for (int64_t rows : {40, 300, 520, 1560, 6200}) {
      const int64_t cols = 260;
      test::RandomMatrix w = test::random_matrix(dt, rows, cols, rng);
      OwnedMatrix tiled = tile_matrix(w.m);
      Matrix t = tiled.view();
      expect_parallel_equals_single(t, pool, rng, dt == DType::kBF16 ? "BF16" : "FP8");
      if (cpu_has_bf16_dot()) {
        t.arith = MatmulArith::kBf16Dot;
        expect_parallel_equals_single(t, pool, rng, "bf16-dot");
        OwnedMatrix paired = tile_matrix(w.m, WeightLayout::kTiledPairs);
        Matrix p = paired.view();
        p.arith = MatmulArith::kBf16Dot;
        expect_parallel_equals_single(p, pool, rng, "bf16-dot pairs");
      }
      if (dt == DType::kF8E4M3) expect_parallel_equals_single(w.m, pool, rng, "row-major FP8");
    }
  }
}

// A list of products (different shapes, inputs and dtypes; one dispatch when they are small)
// equals each product computed alone, for token counts on both sides of the equal-parts split.
TEST(MatmulParallel, ProductListEqualsEachAlone) {
  ThreadPool pool(3);
  Rng rng(78);
  test::RandomMatrix a = test::random_matrix(DType::kF8E4M3, 384, 260, rng);
  test::RandomMatrix b = test::random_matrix(DType::kF8E4M3, 290, 260, rng);
  test::RandomMatrix c = test::random_matrix(DType::kBF16, 70, 130, rng);
  OwnedMatrix ta = tile_matrix(a.m), tb = tile_matrix(b.m), tc = tile_matrix(c.m);
  Matrix ma = ta.view(), mb = tb.view(), mc = tc.view();
  if (cpu_has_bf16_dot()) ma.arith = MatmulArith::kBf16Dot;
  for (int64_t n_tok : {1, 3, 4, 5, 20, 100}) {
    std::vector<float> x1(static_cast<size_t>(n_tok * 260)), x2(static_cast<size_t>(n_tok * 130));
    for (auto& v : x1) v = rng.normal();
    for (auto& v : x2) v = rng.normal();
    const Matrix* ms[] = {&ma, &mb, &mc};
    const float* xs[] = {x1.data(), x1.data(), x2.data()};
    std::vector<std::vector<float>> alone(3), listed(3);
    MatmulProduct products[3];
    for (int k = 0; k < 3; ++k) {
      alone[k].resize(static_cast<size_t>(n_tok * ms[k]->n_rows));
      listed[k].assign(alone[k].size(), std::numeric_limits<float>::quiet_NaN());
      matmul(*ms[k], xs[k], n_tok, alone[k].data());
      products[k] = {ms[k], xs[k], listed[k].data()};
    }
    matmul_parallel(pool, products, n_tok);
    for (int k = 0; k < 3; ++k) {
      for (size_t i = 0; i < alone[k].size(); ++i) {
        ASSERT_FALSE(std::isnan(listed[k][i])) << "product " << k << " tokens " << n_tok;
        ASSERT_EQ(listed[k][i], alone[k][i])
            << "product " << k << " tokens " << n_tok << " i " << i;
      }
    }
  }
}

}  // namespace
}  // namespace dss::cpu
