// CUDA FP8 block GEMV against the scalar reference (kernels/ref), on the aligned (16-byte chunk)
// and the ragged path. Skipped when no CUDA device is present (CI runs without a GPU).
#include "kernels/cuda/fp8_gemv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/rng.h"
#include "kernels/ref/ref_kernels.h"
#include "tensor/dtype.h"

namespace dss {
namespace {

struct Fp8Matrix {
  std::vector<uint8_t> data;
  std::vector<float> scales;
  Matrix m;
};

Fp8Matrix random_fp8(int64_t rows, int64_t cols, uint64_t seed) {
  Fp8Matrix f;
  Rng rng(seed);
  f.data.resize(static_cast<size_t>(rows * cols));
  for (auto& b : f.data) {
    b = static_cast<uint8_t>(rng.next_u64() & 0xFF);
    if ((b & 0x7F) == 0x7F) b &= 0xFE;  // no NaN codes
  }
  const int64_t sr = (rows + 127) / 128, sc = (cols + 127) / 128;
  f.scales.resize(static_cast<size_t>(sr * sc));
  for (auto& s : f.scales) s = 1e-3f * static_cast<float>(1 + rng.next_u64() % 1000);
  f.m = Matrix{DType::kF8E4M3, rows, cols, f.data.data(), f.scales.data()};
  return f;
}

void expect_matches_reference(int64_t rows, int64_t cols) {
  const Fp8Matrix f = random_fp8(rows, cols, static_cast<uint64_t>(rows * 7919 + cols));
  Rng rng(3);
  std::vector<float> x(static_cast<size_t>(cols));
  for (auto& v : x) v = static_cast<float>(rng.next_u64() % 2001) / 1000.0f - 1.0f;
  std::vector<float> want(static_cast<size_t>(rows)), got(static_cast<size_t>(rows));
  ref::matmul(f.m, x.data(), 1, want.data());
  ASSERT_TRUE(cuda::fp8_gemv_host(f.m, x.data(), got.data()).is_ok());
  // Different summation order only: relative to the sum of |terms| (bound ~ n_cols * 2^-24).
  for (int64_t r = 0; r < rows; ++r) {
    double mag = 0.0;
    for (int64_t c = 0; c < cols; ++c) mag += std::fabs(f.m.at(r, c) * x[static_cast<size_t>(c)]);
    EXPECT_NEAR(got[static_cast<size_t>(r)], want[static_cast<size_t>(r)], 1e-5 * mag + 1e-30)
        << "row " << r << " of " << rows << "x" << cols;
  }
}

TEST(CudaFp8Gemv, MatchesReference) {
  if (!cuda::device_present()) GTEST_SKIP() << "no CUDA device";
  expect_matches_reference(384, 1024);  // aligned path, full blocks
  expect_matches_reference(300, 2048);  // ragged row blocks
  expect_matches_reference(129, 200);   // n_cols % 16 != 0: ragged path
  expect_matches_reference(7, 7168);    // fewer rows than a thread block's warps
}

TEST(CudaFp8Gemv, RejectsNonFp8) {
  if (!cuda::device_present()) GTEST_SKIP() << "no CUDA device";
  std::vector<float> w(16, 1.0f), x(4, 1.0f), y(4);
  const Matrix m{DType::kF32, 4, 4, w.data(), nullptr};
  EXPECT_FALSE(cuda::fp8_gemv_host(m, x.data(), y.data()).is_ok());
}

}  // namespace
}  // namespace dss
