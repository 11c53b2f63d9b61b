// kernels/cpu matmul vs kernels/ref on every compiled Highway target this CPU supports, for every
// weight dtype (I8 included), on random shapes including ragged FP8 edge blocks and token counts
// not a multiple of the 4-token tile, and the GEMM path (>= 5 tokens). Error metric: max |y - ref|
// / (rms(ref) + tiny), tolerance 1e-5 (float32 accumulation of up to ~2100 terms vs the
// double-accumulated reference).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/kernels/matmul_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "kernels/cpu/matmul-inl.h"

#ifndef DSS_TESTS_KERNELS_MATMUL_TEST_HELPERS_
#define DSS_TESTS_KERNELS_MATMUL_TEST_HELPERS_
#include "base/rng.h"
#include "kernels/ref/ref_kernels.h"
#include "tensor/tiled_layout.h"
#include "tests/kernels/bf16_round.h"
#include "tests/kernels/random_matrix.h"
namespace dss::test {
// MatmulArith::kBf16Dot's canonical arithmetic (kernels/cpu/matmul_bf16-inl.h), emulated in
// scalar code from its definition: xs = bf16(fl(x * f)) (round to nearest even; an f32 subnormal
// product as zero, as vcvtne2ps2bf16), weights as bf16 (FP8: value * 2^-8, subnormal codes zero),
// per 128-column block the pairs (c, c + 1) in order, odd column first, each an exact product added
// with one rounding and a subnormal sum flushed to zero, block sums added in order. w is row-major
// FP8 or BF16.
inline float ftz(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? 0.0f : v; }
inline void emulate_bf16_dot(const Matrix& w, const float* x, int64_t n_tok, float* y) {
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < w.n_rows; ++r) {
      float total = 0.0f;
      for (int64_t c0 = 0; c0 < w.n_cols; c0 += 128) {
        const int64_t c1 = std::min(w.n_cols, c0 + 128);
        float f = 1.0f;
        if (w.dtype == DType::kF8E4M3) f = w.scales[(r / 128) * w.n_scale_cols() + c0 / 128] * 256;
        auto term = [&](int64_t c, float acc) {
          if (c >= c1) return acc;
          float wb;
          if (w.dtype == DType::kF8E4M3) {
            const uint8_t code = static_cast<const uint8_t*>(w.data)[r * w.n_cols + c];
            wb = (code & 0x78) == 0 ? 0.0f : fp8e4m3_to_f32(code) * 0x1p-8f;
          } else {
            wb = ftz(bf16_to_f32(static_cast<const uint16_t*>(w.data)[r * w.n_cols + c]));
          }
          return ftz(std::fma(wb, bf16_round(x[t * w.n_cols + c] * f), acc));
        };
        float s = 0.0f;
        for (int64_t c = c0; c < c1; c += 2) s = term(c, term(c + 1, s));
        total = c0 == 0 ? s : total + s;
      }
      y[t * w.n_rows + r] = total;
    }
  }
}
}  // namespace dss::test
#endif

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {

// `all` (one MatmulRows call over the n_tok tokens of x) recomputed by calls over tokens
// [t0, t0 + group), rows cut at 0, 3, 32, 45 and n_rows (tile aligned or not): every (row, token)
// bit-identical, for every group size, with t0 stepping by 3 * group (by 1 for groups under 3
// where every_start_small).
void ExpectSameForAnyBatchAndRowSplit(const Matrix& w, const std::vector<float>& x, int64_t n_tok,
                                      const std::vector<float>& all,
                                      std::initializer_list<int64_t> groups,
                                      bool every_start_small) {
  const int64_t rows = w.n_rows, cols = w.n_cols;
  for (const int64_t group : groups) {
    for (int64_t t0 = 0; t0 + group <= n_tok;
         t0 += every_start_small && group < 3 ? 1 : 3 * group) {
      std::vector<float> y(static_cast<size_t>(group * rows), -1.0f);
      const int64_t cuts[] = {0, std::min<int64_t>(3, rows), std::min<int64_t>(32, rows),
                              std::min<int64_t>(45, rows), rows};
      for (size_t k = 0; k + 1 < std::size(cuts); ++k)
        MatmulRows(w, x.data() + t0 * cols, group, y.data(), cuts[k], cuts[k + 1]);
      for (int64_t j = 0; j < group; ++j) {
        for (int64_t r = 0; r < rows; ++r) {
          ASSERT_EQ(y[static_cast<size_t>(j * rows + r)],
                    all[static_cast<size_t>((t0 + j) * rows + r)])
              << dtype_name(w.dtype) << " " << rows << "x" << cols << " group " << group
              << " token " << t0 + j << " row " << r << " target " << hwy::TargetName(HWY_TARGET);
        }
      }
    }
  }
}

void TestMatmulAllDtypes() {
  Rng rng(1234);
  const int64_t shapes[][3] = {{1, 1, 1},
                               {3, 8, 16},
                               {80, 256, 1},
                               {130, 200, 5},
                               {257, 129, 4},
                               {64, 640, 9},
                               {7, 37, 3},
                               // the GEMM path (>= 5 tokens): ragged row tiles, several column
                               // panels of 1024 and token blocks of 64, short tails
                               {50, 1300, 70},
                               {129, 384, 13},
                               {5, 2100, 6},
                               {17, 128, 5},
                               {31, 260, 67}};
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16, DType::kF8E4M3, DType::kI8}) {
    for (const auto& s : shapes) {
      const int64_t rows = s[0], cols = s[1], n_tok = s[2];
      auto w = test::random_matrix(dt, rows, cols, rng);
      std::vector<float> x(static_cast<size_t>(n_tok * cols)),
          y(static_cast<size_t>(n_tok * rows), -1.0f), ref(y.size());
      for (auto& v : x) v = rng.normal();
      ref::matmul(w.m, x.data(), n_tok, ref.data());
      MatmulRows(w.m, x.data(), n_tok, y.data(), 0, rows);
      double ss = 0;
      for (float v : ref) ss += static_cast<double>(v) * v;
      const double rms = std::sqrt(ss / static_cast<double>(ref.size())) + 1e-30;
      double worst = 0;
      for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::abs(y[i] - ref[i]) / rms);
      EXPECT_LE(worst, 1e-5) << dtype_name(dt) << " " << rows << "x" << cols << " tok " << n_tok
                             << " target " << hwy::TargetName(HWY_TARGET);
    }
  }
}

void TestMatmulRowRangeWritesOnlyItsRows() {
  Rng rng(9);
  for (DType dt : {DType::kF8E4M3, DType::kI8}) {
    auto w = test::random_matrix(dt, 300, 256, rng);
    for (const int64_t n_tok : {2, 7}) {  // GEMV and GEMM paths
      std::vector<float> x(static_cast<size_t>(n_tok) * 256);
      for (auto& v : x) v = rng.normal();
      std::vector<float> y(static_cast<size_t>(n_tok) * 300, 7.0f);
      MatmulRows(w.m, x.data(), n_tok, y.data(), 128, 256);
      for (int64_t t = 0; t < n_tok; ++t) {
        for (int64_t r = 0; r < 300; ++r) {
          if (r < 128 || r >= 256) {
            EXPECT_EQ(y[static_cast<size_t>(t * 300 + r)], 7.0f);
          }
        }
      }
    }
  }
}

// Every (row, token) result is bit-identical whatever the batch around it (GEMV for <= 4 tokens,
// GEMM tiles and remainders for more) and whatever row range computes it (the thread split):
// the engine relies on this for batched == alone and chunked == one-shot.
void TestMatmulResultsIndependentOfBatchAndRowSplit() {
  Rng rng(77);
  for (DType dt : {DType::kF8E4M3, DType::kBF16, DType::kF32}) {
    const int64_t rows = 37, cols = 2100, n_tok = 11;  // 3 panels, ragged last FP8 block
    auto w = test::random_matrix(dt, rows, cols, rng);
    std::vector<float> x(static_cast<size_t>(n_tok * cols));
    for (auto& v : x) v = rng.normal();
    std::vector<float> all(static_cast<size_t>(n_tok * rows));
    MatmulRows(w.m, x.data(), n_tok, all.data(), 0, rows);
    for (int64_t group : {1, 2, 3, 4, 5, 6}) {  // tokens [t0, t0 + group) as one call
      for (int64_t t0 = 0; t0 + group <= n_tok; t0 += group) {
        std::vector<float> y(static_cast<size_t>(group * rows));
        const int64_t cuts[] = {0, 5, 16, 17, 29, rows};  // odd row ranges
        for (size_t k = 0; k + 1 < std::size(cuts); ++k)
          MatmulRows(w.m, x.data() + t0 * cols, group, y.data(), cuts[k], cuts[k + 1]);
        for (int64_t t = 0; t < group; ++t) {
          for (int64_t r = 0; r < rows; ++r) {
            ASSERT_EQ(y[static_cast<size_t>(t * rows + r)],
                      all[static_cast<size_t>((t0 + t) * rows + r)])
                << dtype_name(dt) << " group " << group << " token " << t0 + t << " row " << r
                << " target " << hwy::TargetName(HWY_TARGET);
          }
        }
      }
    }
  }
}

// The tiled layout (tensor/tiled_layout.h, what Model::load uses by default): the same elements
// (Matrix::at), products within the reference tolerance for every dtype, path (GEMV groups, GEMM
// token blocks and column blocks) and ragged shape (a last tile padded with zero rows, columns
// not a multiple of any block), and its own canonical arithmetic: every (row, token) result
// bit-identical whatever the token batch around it and whatever row range (thread split, tile
// aligned or not) computes it.
void TestMatmulTiled() {
  Rng rng(2024);
  const int64_t shapes[][2] = {{1, 1}, {8, 16}, {37, 2100}, {300, 256}, {130, 1040}, {5, 47}};
  for (DType dt : {DType::kF8E4M3, DType::kBF16, DType::kI8}) {
    for (const auto& s : shapes) {
      const int64_t rows = s[0], cols = s[1];
      auto w = test::random_matrix(dt, rows, cols, rng);
      ASSERT_TRUE(can_tile(w.m));
      const OwnedMatrix tiled = tile_matrix(w.m);
      const Matrix t = tiled.view();
      ASSERT_EQ(t.layout, WeightLayout::kTiled);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(t.at(r, c), w.m.at(r, c)) << r << "," << c;
      }
      const int64_t n_tok = 53;  // > one GEMM token block
      std::vector<float> x(static_cast<size_t>(n_tok * cols));
      for (auto& v : x) v = rng.normal();
      std::vector<float> all(static_cast<size_t>(n_tok * rows)), ref(all.size());
      MatmulRows(t, x.data(), n_tok, all.data(), 0, rows);
      ref::matmul(w.m, x.data(), n_tok, ref.data());
      double ss = 0;
      for (float v : ref) ss += static_cast<double>(v) * v;
      const double rms = std::sqrt(ss / static_cast<double>(ref.size())) + 1e-30;
      double worst = 0;
      for (size_t i = 0; i < all.size(); ++i)
        worst = std::max(worst, std::abs(all[i] - ref[i]) / rms);
      EXPECT_LE(worst, 1e-5) << dtype_name(dt) << " " << rows << "x" << cols << " target "
                             << hwy::TargetName(HWY_TARGET);
      // tokens [t0, t0 + group) as one call
      ExpectSameForAnyBatchAndRowSplit(t, x, n_tok, all, {1, 2, 3, 4, 5, 7}, false);
    }
  }
}

// The tiled FP8 decode (kernels/cpu/matmul-inl.h DecodeFp8Column, TiledColumn) holds every e4m3
// value exactly, subnormals and signed zeros included (it goes through f32 subnormals, so this also
// fails if denormals-are-zero were ever set): row r of the weights is code r in every column, the
// scales powers of two, and token j's x one-hot at column k_j, so y[j, r] must be code r's value
// times its block's scale exactly, on the GEMV and the GEMM paths.
void TestMatmulTiledFp8DecodesEveryCode() {
  const int64_t rows = 256, cols = 133;  // two 128-row and two column scale blocks, ragged
  std::vector<uint8_t> data(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const auto code = static_cast<uint8_t>((r & 0x7F) == 0x7F ? 0 : r);  // no NaN
    for (int64_t c = 0; c < cols; ++c) data[static_cast<size_t>(r * cols + c)] = code;
  }
  const std::vector<float> scales = {0x1p-3f, 0x1p5f, 0x1p-9f, 1.0f};  // [2, 2]
  const Matrix w{DType::kF8E4M3, rows, cols, data.data(), scales.data()};
  const OwnedMatrix tiled = tile_matrix(w);
  const int64_t probe[] = {0, 127, 128, 132, 64};
  for (int64_t n_tok : {1, 2, 3, 5}) {
    std::vector<float> x(static_cast<size_t>(n_tok * cols), 0.0f),
        y(static_cast<size_t>(n_tok * rows), -7.0f);
    for (int64_t j = 0; j < n_tok; ++j) x[static_cast<size_t>(j * cols + probe[j])] = 1.0f;
    MatmulRows(tiled.view(), x.data(), n_tok, y.data(), 0, rows);
    for (int64_t j = 0; j < n_tok; ++j) {
      for (int64_t r = 0; r < rows; ++r) {
        const float s = scales[static_cast<size_t>((r / 128) * 2 + probe[j] / 128)];
        const float want = fp8e4m3_to_f32(data[static_cast<size_t>(r * cols)]) * s;
        ASSERT_EQ(y[static_cast<size_t>(j * rows + r)], want)
            << "code " << r << " tokens " << n_tok << " column " << probe[j] << " target "
            << hwy::TargetName(HWY_TARGET);
      }
    }
  }
}

// The FP8 GEMV folds the decode's 2^112 into x * scale where that is exact (matmul-inl.h
// Fp8FoldsExactly) and keeps the multiply elsewhere. Both must give the GEMM path's bits: tokens
// with |x * scale * 2^8| just inside the fold's range at both ends, just outside (huge and tiny
// magnitudes, where a fold would overflow or lose subnormal rounding), with zeros, and mixed in
// one call. Every (row, token) result of 1- and 2-token calls equals the same token's in a
// 7-token (GEMM) call, and all stay within the reference tolerance.
void TestMatmulTiledFp8FoldBoundaries() {
  Rng rng(77);
  const int64_t rows = 96, cols = 384;
  auto w = test::random_matrix(DType::kF8E4M3, rows, cols, rng);
  const OwnedMatrix tiled = tile_matrix(w.m);
  float f_min = INFINITY, f_max = 0;  // the fold's factor per block: scale * 2^8
  for (float s : w.scales) {
    f_min = std::min(f_min, s * 256.0f);
    f_max = std::max(f_max, s * 256.0f);
  }
  const int64_t n_tok = 7;
  std::vector<float> x(static_cast<size_t>(n_tok * cols));
  auto fill = [&](int64_t j, double lo, double hi, bool zeros) {  // log-uniform in [lo, hi]
    for (int64_t c = 0; c < cols; ++c) {
      const auto v = static_cast<float>(lo * std::pow(static_cast<double>(hi) / lo, rng.uniform()));
      x[static_cast<size_t>(j * cols + c)] = (zeros && c % 5 == 0) ? 0.0f : (c % 2 ? -v : v);
    }
  };
  fill(0, 0x1p-125f / f_min * 1.01f, 0x1p15f / f_max * 0.99f, false);  // folds, both ends
  fill(1, 0x1p-125f / f_min * 1.01f, 0x1p15f / f_max * 0.99f, true);   // folds, with zeros
  fill(2, 1.0f, 0x1p15f / f_max * 4.0f, false);                        // too large: no fold
  fill(3, 0x1p-125f / f_max * 0.25f, 1.0f, true);                      // too small: no fold
  fill(4, 0.5f, 2.0f, false);
  fill(5, 0x1p-140f, 0x1p-130f, false);  // subnormal x
  fill(6, 0.5f, 2.0f, true);
  std::vector<float> all(static_cast<size_t>(n_tok * rows)), ref(all.size());
  MatmulRows(tiled.view(), x.data(), n_tok, all.data(), 0, rows);
  ref::matmul(w.m, x.data(), n_tok, ref.data());
  for (int64_t j = 0; j < n_tok; ++j) {  // per token: the magnitudes differ by 2^100
    double ss = 0;
    for (int64_t r = 0; r < rows; ++r) ss += std::pow(ref[static_cast<size_t>(j * rows + r)], 2);
    const double rms = std::sqrt(ss / static_cast<double>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      const size_t i = static_cast<size_t>(j * rows + r);
      EXPECT_LE(std::abs(all[i] - ref[i]), 1e-5 * rms + 1e-44) << "token " << j << " row " << r;
    }
  }
  for (int64_t n : {1, 2}) {
    for (int64_t t0 = 0; t0 + n <= n_tok; ++t0) {
      std::vector<float> y(static_cast<size_t>(n * rows));
      MatmulRows(tiled.view(), x.data() + t0 * cols, n, y.data(), 0, rows);
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t r = 0; r < rows; ++r) {
          ASSERT_EQ(y[static_cast<size_t>(j * rows + r)],
                    all[static_cast<size_t>((t0 + j) * rows + r)])
              << "tokens " << n << " token " << t0 + j << " row " << r << " target "
              << hwy::TargetName(HWY_TARGET);
        }
      }
    }
  }
}

// MatmulArith::kBf16Dot (AVX3 targets on CPUs with AVX512-BF16; skipped elsewhere): for FP8 and
// BF16 tiled matrices of ragged shapes (odd column counts pair the last column with zero), every
// result bit-identical to the scalar emulation of its canonical arithmetic (emulate_bf16_dot)
// on the GEMV and GEMM paths, whatever the batch and row split, including tokens whose magnitudes
// fall on either side of the FP8 fold's range; and within bf16 accuracy of the float64 reference.
// The pair-interleaved layout (WeightLayout::kTiledPairs, even column counts) holds the same
// elements and gives the same bits as kTiled, on every path and split.
void TestMatmulTiledBf16Dot() {
  if (!kTargetHasBf16Dot || !__builtin_cpu_supports("avx512bf16")) {
    fprintf(stderr, "TestMatmulTiledBf16Dot: skipped on %s (no AVX512-BF16)\n",
            hwy::TargetName(HWY_TARGET));
    return;
  }
  Rng rng(4242);
  // 80 x 2101: odd columns over row ranges of several tiles, where BF16 converts x once per call
  // up to 15 tokens and per block at 16 (kBf16CallXsPairs).
  // 250 x 64: the last row cut of ExpectSameForAnyBatchAndRowSplit, [45, 250), spans 7 tiles:
  // runs of 2 (first token group of 3-6: 3-6 and 9-12 tokens) end in a run of 1 (first group of
  // 1-2 or 7-8 tokens: one tile at a time).
  const int64_t shapes[][2] = {{1, 1},    {8, 16}, {37, 2100}, {300, 256}, {130, 1040}, {5, 47},
                               {64, 133}, {3, 2},  {70, 62},   {80, 2101}, {250, 64}};
  for (DType dt : {DType::kF8E4M3, DType::kBF16}) {
    for (const auto& s : shapes) {
      const int64_t rows = s[0], cols = s[1];
      auto w = test::random_matrix(dt, rows, cols, rng);
      OwnedMatrix tiled = tile_matrix(w.m);
      Matrix t = tiled.view();
      t.arith = MatmulArith::kBf16Dot;
      const int64_t n_tok = 53;
      std::vector<float> x(static_cast<size_t>(n_tok * cols));
      for (auto& v : x) v = rng.normal();
      if (dt == DType::kF8E4M3 && cols >= 128) {  // tokens 1-3: outside the fold's range
        for (int64_t c = 0; c < cols; ++c) {
          x[static_cast<size_t>(cols + c)] *= 0x1p40f;
          x[static_cast<size_t>(2 * cols + c)] *= c % 3 == 0 ? 0x1p-120f : 1.0f;
          x[static_cast<size_t>(3 * cols + c)] = c % 4 == 0 ? 0.0f : x[3 * cols + c];
        }
      }
      if (dt == DType::kBF16) {  // token 3: f32 subnormals that round to nearest 2^-126 (xs 0)
        for (int64_t c = 0; c < cols; ++c)
          x[static_cast<size_t>(3 * cols + c)] = (c % 2 == 0 ? 1.0f : -1.0f) * 0x1.fffffcp-127f;
      }
      std::vector<float> all(static_cast<size_t>(n_tok * rows)), emu(all.size()), ref(all.size());
      MatmulRows(t, x.data(), n_tok, all.data(), 0, rows);
      test::emulate_bf16_dot(w.m, x.data(), n_tok, emu.data());
      ref::matmul(w.m, x.data(), n_tok, ref.data());
      for (size_t i = 0; i < all.size(); ++i) {
        ASSERT_EQ(all[i], emu[i]) << dtype_name(dt) << " " << rows << "x" << cols << " token "
                                  << i / rows << " row " << i % rows;
      }
      // Against float64, per result (tokens 4..: x of ordinary magnitude): x * f rounded to bf16
      // is off by <= 2^-9 relative, the float32 sums by far less, so |y - ref| <= 2^-8 *
      // sum |w x|, plus the terms of e4m3 subnormal codes, which count as zero.
      double worst = 0;
      for (int64_t j = 4; j < n_tok; ++j) {
        for (int64_t r = 0; r < rows; ++r) {
          double sum_abs = 0, flushed = 0;
          for (int64_t c = 0; c < cols; ++c) {
            const double term = std::abs(static_cast<double>(w.m.at(r, c)) * x[j * cols + c]);
            sum_abs += term;
            if (dt == DType::kF8E4M3 && (w.data[static_cast<size_t>(r * cols + c)] & 0x78) == 0)
              flushed += term;
          }
          const size_t i = static_cast<size_t>(j * rows + r);
          const double err = std::abs(static_cast<double>(all[i]) - ref[i]);
          EXPECT_LE(err, 0x1p-8 * sum_abs + flushed)
              << dtype_name(dt) << " " << rows << "x" << cols << " token " << j << " row " << r;
          worst = std::max(worst, err);
        }
      }
      EXPECT_GT(worst, 0.0) << "bf16 rounding should show";
      // The GEMV up to 4 tokens (FP8) / 16 (BF16) in groups of up to 8 (BF16 16: 8 + 8, 9: 5 + 4,
      // 12: 6 + 6), 1-2-token groups one tile at a time, 3-6-token groups on two side by side
      // (BF16 6, 10: 5 + 5, 11: 6 + 5; 13: 7 + 6 runs one tile, its second group too), the GEMM
      // from 5 / 17.
      ExpectSameForAnyBatchAndRowSplit(t, x, n_tok, all,
                                       {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17}, true);
      ASSERT_EQ(can_tile(w.m, WeightLayout::kTiledPairs), cols % 2 == 0);
      if (cols % 2 != 0) continue;
      OwnedMatrix paired = tile_matrix(w.m, WeightLayout::kTiledPairs);
      Matrix pm = paired.view();
      ASSERT_EQ(pm.layout, WeightLayout::kTiledPairs);
      pm.arith = MatmulArith::kBf16Dot;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(pm.at(r, c), w.m.at(r, c)) << r << "," << c;
      }
      // The layout's contract (tensor/matrix.h), byte for byte: (r, c) at
      // (r / 32) * 32 * cols + (c / 2) * 64 + 2 * (r % 32) + c % 2 elements.
      const size_t es = dtype_size(dt);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const size_t at =
              static_cast<size_t>((r / 32) * 32 * cols + (c / 2) * 64 + 2 * (r % 32) + c % 2) * es;
          ASSERT_EQ(std::memcmp(paired.data.data() + at,
                                w.data.data() + static_cast<size_t>(r * cols + c) * es, es),
                    0)
              << r << "," << c;
        }
      }
      std::vector<float> pa(all.size(), -1.0f);
      MatmulRows(pm, x.data(), n_tok, pa.data(), 0, rows);
      for (size_t i = 0; i < all.size(); ++i) {
        ASSERT_EQ(pa[i], all[i]) << "pairs " << dtype_name(dt) << " " << rows << "x" << cols
                                 << " token " << i / rows << " row " << i % rows;
      }
      ExpectSameForAnyBatchAndRowSplit(pm, x, n_tok, all,
                                       {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17}, true);
    }
  }
}
}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace dss::cpu {
HWY_BEFORE_TEST(MatmulTest);
HWY_EXPORT_AND_TEST_P(MatmulTest, TestMatmulAllDtypes);
HWY_EXPORT_AND_TEST_P(MatmulTest, TestMatmulRowRangeWritesOnlyItsRows);
HWY_EXPORT_AND_TEST_P(MatmulTest, TestMatmulResultsIndependentOfBatchAndRowSplit);
HWY_EXPORT_AND_TEST_P(MatmulTest, TestMatmulTiled);
HWY_EXPORT_AND_TEST_P(MatmulTest, TestMatmulTiledFp8DecodesEveryCode);
HWY_EXPORT_AND_TEST_P(MatmulTest, TestMatmulTiledFp8FoldBoundaries);
HWY_EXPORT_AND_TEST_P(MatmulTest, TestMatmulTiledBf16Dot);
}  // namespace dss::cpu
#endif
