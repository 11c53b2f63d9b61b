// kernels/cpu index_scores vs kernels/ref on every compiled Highway target this CPU supports, and
// top_k_indices vs the partial_sort selection the model used before, on data with many ties.
//
// Score tolerance, per key i (first-order bound of fp32 recursive summation, u = 2^-24):
//   |score - ref| <= (D + HI + 8) * u * key_scales[i] * sum_h |coef[h]| * sum_d |q[h, d] k[i, d]|
// D terms in each dot, relu is 1-Lipschitz, one rounding for coef, at most HI for the head sum,
// one for the key scale; the double reference and its final rounding are inside the slack.
// The e4m3 decode itself is exact and is checked bit for bit on all 254 non-NaN codes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/kernels/indexer_score_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "kernels/cpu/indexer_score-inl.h"

#ifndef DSS_TESTS_KERNELS_INDEXER_SCORE_TEST_HELPERS_
#define DSS_TESTS_KERNELS_INDEXER_SCORE_TEST_HELPERS_
#include "base/rng.h"
#include "kernels/ref/ref_kernels.h"
namespace dss::test {
struct IndexCase {
  int64_t ld = 0;
  std::vector<uint8_t> keys;  // [D, ld] transposed: key i's value d at keys[d * ld + i]
  std::vector<float> key_scales, q, coef;
  uint8_t key(int64_t i, int32_t d) const { return keys[static_cast<size_t>(d * ld + i)]; }
};
// ld >= n; the bytes of columns [n, ld) are NaN codes (a kernel that used them would produce NaN
// scores only in lanes it must not store), and with ld == n the buffer ends exactly at the last
// key, so ASan catches a read past it.
inline IndexCase random_index_case(int64_t n, int32_t HI, int32_t D, Rng& rng, int64_t ld = 0) {
  IndexCase c;
  c.ld = ld > 0 ? ld : n;
  c.keys.assign(static_cast<size_t>(c.ld * D), uint8_t{0x7F});
  for (int32_t d = 0; d < D; ++d) {
    for (int64_t i = 0; i < n; ++i) {  // every code but NaN, incl. subnormals and both zeros
      auto b = static_cast<uint8_t>(rng.next_u64());
      if ((b & 0x7F) == 0x7F) b = 0x3F;
      c.keys[static_cast<size_t>(d * c.ld + i)] = b;
    }
  }
  c.key_scales.resize(static_cast<size_t>(n));
  for (auto& s : c.key_scales) {  // UE8M0-like powers of two, sometimes not
    s = std::exp2(static_cast<float>(static_cast<int>(rng.next_u64() % 16) - 12));
    if (rng.next_u64() % 4 == 0) s *= 1.0f + rng.uniform();
  }
  c.q.resize(static_cast<size_t>(HI) * D);
  for (auto& v : c.q) v = rng.normal();
  c.coef.resize(static_cast<size_t>(HI));
  for (auto& v : c.coef) v = rng.normal();  // both signs, as weights_proj gives
  return c;
}
// The tolerance bound of the file comment for key i.
inline double index_tolerance(const IndexCase& c, int64_t i, int32_t HI, int32_t D) {
  double b = 0.0;
  for (int32_t h = 0; h < HI; ++h) {
    double a = 0.0;
    for (int32_t d = 0; d < D; ++d) {
      a += std::abs(static_cast<double>(c.q[static_cast<size_t>(h * D + d)]) *
                    fp8e4m3_to_f32(c.key(i, d)));
    }
    b += std::abs(static_cast<double>(c.coef[static_cast<size_t>(h)])) * a;
  }
  return (D + HI + 8) * std::exp2(-24.0) * c.key_scales[static_cast<size_t>(i)] * b;
}
}  // namespace dss::test
#endif

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {

void TestIndexScoresMatchRef() {
  Rng rng(4321);
  // {n, HI, D, ld}: head counts that are and are not multiples of 4 and 2 (head-tile
  // remainders), odd D, key counts below one vector, between the 1- and 3-vector blocks and with
  // a partial last vector on 4-, 8- and 16-lane targets; ld == n (buffer ends at the last key) or
  // a page longer than the keys scored.
  const int64_t shapes[][4] = {
      {1, 1, 128, 1},   {5, 3, 20, 5},     {13, 4, 128, 64},  {37, 8, 128, 37},  {100, 12, 64, 128},
      {29, 16, 36, 29}, {50, 24, 128, 64}, {41, 40, 128, 41}, {70, 64, 128, 70}, {3, 128, 128, 64},
      {25, 8, 256, 25}, {9, 8, 36, 9},     {64, 8, 128, 64},  {48, 7, 128, 48},  {63, 2, 17, 63}};
  for (const auto& s : shapes) {
    const int64_t n = s[0];
    const auto HI = static_cast<int32_t>(s[1]), D = static_cast<int32_t>(s[2]);
    const auto c = test::random_index_case(n, HI, D, rng, s[3]);
    std::vector<float> y(static_cast<size_t>(n) + 1, -7.0f), ref(static_cast<size_t>(n));
    IndexScores(c.keys.data(), c.ld, c.key_scales.data(), n, c.q.data(), c.coef.data(), HI, D,
                y.data());
    ref::index_scores(c.keys.data(), c.ld, c.key_scales.data(), n, c.q.data(), c.coef.data(), HI, D,
                      ref.data());
    for (int64_t i = 0; i < n; ++i) {
      const auto ui = static_cast<size_t>(i);
      EXPECT_LE(std::abs(static_cast<double>(y[ui]) - ref[ui]),
                test::index_tolerance(c, i, HI, D) + 1e-30)
          << "n " << n << " HI " << HI << " D " << D << " key " << i << " got " << y[ui] << " ref "
          << ref[ui] << " target " << hwy::TargetName(HWY_TARGET);
    }
    EXPECT_EQ(y[static_cast<size_t>(n)], -7.0f) << "wrote past scores[n)";
  }
}

// Scores do not depend on how a run of keys is cut into calls (the per-key arithmetic is fixed:
// same chains, same head order), so a page scored whole equals its keys scored in pieces.
void TestIndexScoresIndependentOfBlocking() {
  Rng rng(99);
  const int64_t n = 64;
  const int32_t HI = 8, D = 128;
  const auto c = test::random_index_case(n, HI, D, rng);
  std::vector<float> whole(n), parts(n);
  IndexScores(c.keys.data(), c.ld, c.key_scales.data(), n, c.q.data(), c.coef.data(), HI, D,
              whole.data());
  for (int64_t i0 = 0, len = 1; i0 < n; i0 += len, len = len % 11 + 3) {
    const int64_t m = std::min(len, n - i0);
    IndexScores(c.keys.data() + i0, c.ld, c.key_scales.data() + i0, m, c.q.data(), c.coef.data(),
                HI, D, parts.data() + i0);
  }
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(whole[i], parts[i]) << "key " << i;
}

// With q one-hot (+1 or -1) at one dimension, coef 1 and scale 1 the score is max(0, +-value)
// with no rounding at all, so the decoder is checked exactly on every code, subnormals included.
void TestIndexScoresDecodeEveryCodeExactly() {
  const int32_t D = 128, d0 = 37;
  std::vector<uint8_t> keys(256 * D);  // [D, 256]: key i is code i in every dimension
  for (int32_t d = 0; d < D; ++d) {
    for (int i = 0; i < 256; ++i)
      keys[static_cast<size_t>(d) * 256 + i] = static_cast<uint8_t>((i & 0x7F) == 0x7F ? 0 : i);
  }
  std::vector<float> ones(256, 1.0f), q(D, 0.0f), pos(256), neg(256);
  const float coef = 1.0f;
  q[d0] = 1.0f;
  IndexScores(keys.data(), 256, ones.data(), 256, q.data(), &coef, 1, D, pos.data());
  q[d0] = -1.0f;
  IndexScores(keys.data(), 256, ones.data(), 256, q.data(), &coef, 1, D, neg.data());
  for (int i = 0; i < 256; ++i) {
    const float v = fp8e4m3_to_f32(keys[static_cast<size_t>(i)]);
    EXPECT_EQ(pos[static_cast<size_t>(i)], std::max(0.0f, v)) << "code " << i;
    EXPECT_EQ(neg[static_cast<size_t>(i)], std::max(0.0f, -v)) << "code " << i;
  }
}

// TopKGather against its definition: every n (vector body and scalar tail), thresholds keeping
// none, some and all (ties at tau, +-0, negatives), caps below, at and above the count; the
// count is exact, keys / idx [0, count) are the selected ones in order when count < cap, and
// nothing at or past [cap) is written.
void TestTopKGatherMatchesDefinition() {
  Rng rng(31);
  const float levels[] = {-1.5f, -0.0f, 0.0f, 0.5f, 2.0f};
  for (int64_t n : {0, 1, 7, 8, 9, 31, 64, 333}) {
    std::vector<float> s(static_cast<size_t>(n));
    for (auto& v : s) v = rng.next_u64() % 2 == 0 ? levels[rng.next_u64() % 5] : rng.normal();
    for (float at : {-10.0f, 2.0f, 0.0f, -0.0f, 0.5f, 10.0f}) {
      const uint32_t tau = top_k_key(at);  // keys <= tau: scores >= at
      std::vector<uint32_t> want_k;
      std::vector<int32_t> want_i;
      for (int64_t i = 0; i < n; ++i) {
        if (top_k_key(s[static_cast<size_t>(i)]) <= tau) {
          want_k.push_back(top_k_key(s[static_cast<size_t>(i)]));
          want_i.push_back(static_cast<int32_t>(1000 + i));
        }
      }
      const auto count = static_cast<int64_t>(want_k.size());
      for (int64_t cap : {int64_t{1}, count / 2 + 1, count, count + 1, n + 8}) {
        if (cap < 1) continue;
        std::vector<uint32_t> keys(static_cast<size_t>(cap) + 1, 77u);
        std::vector<int32_t> idx(static_cast<size_t>(cap) + 1, -9);
        const int64_t m = TopKGather(s.data(), n, 1000, tau, keys.data(), idx.data(), cap);
        EXPECT_EQ(m, count) << "n " << n << " at " << at << " cap " << cap;
        if (m < cap) {
          for (int64_t j = 0; j < m; ++j) {
            EXPECT_EQ(keys[static_cast<size_t>(j)], want_k[static_cast<size_t>(j)]) << j;
            EXPECT_EQ(idx[static_cast<size_t>(j)], want_i[static_cast<size_t>(j)]) << j;
          }
        }
        EXPECT_EQ(keys[static_cast<size_t>(cap)], 77u) << "wrote past keys[cap)";
        EXPECT_EQ(idx[static_cast<size_t>(cap)], -9) << "wrote past idx[cap)";
      }
    }
  }
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>

#include "kernels/cpu/indexer_score.h"

namespace dss::cpu {
HWY_BEFORE_TEST(IndexScoresTest);
HWY_EXPORT_AND_TEST_P(IndexScoresTest, TestIndexScoresMatchRef);
HWY_EXPORT_AND_TEST_P(IndexScoresTest, TestIndexScoresDecodeEveryCodeExactly);
HWY_EXPORT_AND_TEST_P(IndexScoresTest, TestIndexScoresIndependentOfBlocking);
HWY_EXPORT_AND_TEST_P(IndexScoresTest, TestTopKGatherMatchesDefinition);

// Many ties (a handful of distinct values, +0 and -0 mixed, negatives) and distinct values;
// every k from the edges and the middle; the selected set and order must equal the reference.
TEST(TopKIndices, SameSetAsPartialSortWithTies) {
  Rng rng(77);
  const float levels[] = {-2.0f, -0.5f, -0.0f, 0.0f, 0.25f, 1.0f, 3.0f};
  for (int64_t n : {1, 2, 3, 10, 64, 1000, 4099, 40000}) {
    for (int mode = 0; mode < 3; ++mode) {
      std::vector<float> s(static_cast<size_t>(n));
      for (auto& v : s) {
        if (mode == 0) v = levels[rng.next_u64() % 7];
        if (mode == 1) v = rng.normal();
        if (mode == 2) v = rng.next_u64() % 3 == 0 ? rng.normal() : levels[rng.next_u64() % 2 + 2];
      }
      // n / 16, n / 10, n / 7: the sampled-threshold path (n >= 4096, 6 k <= n)
      for (int64_t k : {int64_t{0}, int64_t{1}, n / 16, n / 10, n / 7, n / 3, n / 2, n - 1, n}) {
        if (k < 0) continue;
        std::vector<int32_t> got(static_cast<size_t>(k) + 1, -5), want(static_cast<size_t>(k)),
            scratch(static_cast<size_t>(n));
        top_k_indices(s.data(), n, k, got.data(), scratch.data());
        ref::top_k_indices(s.data(), n, k, want.data());
        EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin()))
            << "n " << n << " k " << k << " mode " << mode;
        EXPECT_EQ(got[static_cast<size_t>(k)], -5) << "wrote past out[k)";
      }
    }
  }
}

TEST(IndexScores, DispatchMatchesRef) {
  Rng rng(5);
  const int64_t n = 300;
  const int32_t HI = 64, D = 128;
  const auto c = test::random_index_case(n, HI, D, rng);
  std::vector<float> y(n), ref(n);
  index_scores(c.keys.data(), c.ld, c.key_scales.data(), n, c.q.data(), c.coef.data(), HI, D,
               y.data());
  ref::index_scores(c.keys.data(), c.ld, c.key_scales.data(), n, c.q.data(), c.coef.data(), HI, D,
                    ref.data());
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_LE(
        std::abs(static_cast<double>(y[static_cast<size_t>(i)]) - ref[static_cast<size_t>(i)]),
        test::index_tolerance(c, i, HI, D) + 1e-30);
  }
}
}  // namespace dss::cpu
#endif
