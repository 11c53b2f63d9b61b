// kernels/cpu/attn_tile vs kernels/ref on every compiled Highway target this CPU supports: causal
// (dense) and sparse (-inf masked) attention of a chunk of tokens composed tile by tile the way
// the MLA naive prefill does (scores over two key segments, online softmax, P V), against the
// double-precision two-pass reference; then the canonical-arithmetic contract: every token's
// output bit-identical however the tokens are grouped into calls, and the edge cases of the
// softmax step (nothing attended, all masked, a maximum that moves).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/kernels/attn_tile_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "kernels/cpu/attn_tile-inl.h"

#ifndef DSS_TESTS_KERNELS_ATTN_TILE_TEST_HELPERS_
#define DSS_TESTS_KERNELS_ATTN_TILE_TEST_HELPERS_
#include "base/rng.h"
#include "kernels/ref/ref_kernels.h"
#include "tests/kernels/rel_rms.h"
namespace dss::test {

// One head's problem: keys [L, d_a + d_b] and values [L, d_v] row-major, queries [n_tok, d_a +
// d_b] for the tokens at positions p0 .. p0 + n_tok - 1 (L = p0 + n_tok); token i attends the
// positions in attended[i] (sorted).
struct AttnProblem {
  int64_t d_a, d_b, d_v, p0, n_tok, L;
  std::vector<float> q, k, v;
  std::vector<std::vector<int32_t>> attended;
  AttnProblem(int64_t da, int64_t db, int64_t dv, int64_t p, int64_t n, bool sparse, dss::Rng& rng)
      : d_a(da), d_b(db), d_v(dv), p0(p), n_tok(n), L(p + n) {
    const int64_t dq = d_a + d_b;
    q.resize(static_cast<size_t>(n_tok * dq));
    k.resize(static_cast<size_t>(L * dq));
    v.resize(static_cast<size_t>(L * d_v));
    for (auto& x : q) x = rng.normal();
    for (auto& x : k) x = rng.normal();
    for (auto& x : v) x = rng.normal();
    attended.resize(static_cast<size_t>(n_tok));
    for (int64_t i = 0; i < n_tok; ++i) {
      for (int32_t j = 0; j <= p0 + i; ++j) {
        // Sparse: about a third of the positions, a token's own position always.
        if (!sparse || j == p0 + i || rng.next_u64() % 3 == 0)
          attended[static_cast<size_t>(i)].push_back(j);
      }
    }
  }
  float at_k(int64_t j, int64_t c) const { return k[static_cast<size_t>(j * (d_a + d_b) + c)]; }
};

// The reference output [n_tok, d_v].
inline std::vector<float> reference(const AttnProblem& pb, float scale) {
  std::vector<float> out(static_cast<size_t>(pb.n_tok * pb.d_v));
  for (int64_t i = 0; i < pb.n_tok; ++i) {
    const auto& a = pb.attended[static_cast<size_t>(i)];
    ref::attention(pb.q.data() + i * (pb.d_a + pb.d_b), pb.k.data(), pb.d_a + pb.d_b,
                   pb.d_a + pb.d_b, pb.v.data(), pb.d_v, pb.d_v, a.data(),
                   static_cast<int64_t>(a.size()), scale, out.data() + i * pb.d_v);
  }
  return out;
}

}  // namespace dss::test
#endif

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {

// Runs tokens [t0, t1) of the problem through the three kernels over tiles of T positions, the
// way mla_naive does: per tile the keys transposed (kt_a: the first d_a dimensions, kt_b: the
// rest), the values row-major in place, per token its valid length in the tile (dense: up to its
// position; sparse: up to its last attended position, the others set to -inf). Writes the
// normalised outputs of those tokens to out[t * d_v].
void RunTiles(const test::AttnProblem& pb, int64_t T, int64_t t0, int64_t t1, float scale,
              float* out) {
  const int64_t n = t1 - t0, dq = pb.d_a + pb.d_b;
  std::vector<float> kt_a(static_cast<size_t>(std::max<int64_t>(pb.d_a, 1) * T)),
      kt_b(static_cast<size_t>(std::max<int64_t>(pb.d_b, 1) * T));
  std::vector<float> s(static_cast<size_t>(n * T)), m(static_cast<size_t>(n)),
      l(static_cast<size_t>(n)), corr(static_cast<size_t>(n)), o(static_cast<size_t>(n * pb.d_v));
  std::vector<int32_t> n_valid(static_cast<size_t>(n));
  std::fill(m.begin(), m.end(), -std::numeric_limits<float>::infinity());
  for (int64_t q0 = 0; q0 < pb.L; q0 += T) {
    const int64_t nt = std::min(T, pb.L - q0);
    for (int64_t c = 0; c < dq; ++c) {
      for (int64_t j = 0; j < T; ++j) {
        // Past the tile's positions: NaN, to show they are never used.
        const float x = j < nt ? pb.at_k(q0 + j, c) : std::numeric_limits<float>::quiet_NaN();
        if (c < pb.d_a) {
          kt_a[static_cast<size_t>(c * T + j)] = x;
        } else {
          kt_b[static_cast<size_t>((c - pb.d_a) * T + j)] = x;
        }
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      const auto& a = pb.attended[static_cast<size_t>(t0 + i)];
      int32_t nv = 0;
      for (int32_t p : a)
        if (p >= q0 && p < q0 + nt) nv = static_cast<int32_t>(p - q0 + 1);
      n_valid[static_cast<size_t>(i)] = nv;
    }
    AttnTileScores(pb.q.data() + t0 * dq, dq, n, kt_a.data(), pb.d_a, kt_b.data(), pb.d_b, T, T,
                   n_valid.data(), s.data(), T);
    for (int64_t i = 0; i < n; ++i) {  // mask the unattended positions below the valid length
      const auto& a = pb.attended[static_cast<size_t>(t0 + i)];
      for (int32_t j = 0; j < n_valid[static_cast<size_t>(i)]; ++j) {
        if (!std::binary_search(a.begin(), a.end(), static_cast<int32_t>(q0 + j)))
          s[static_cast<size_t>(i * T + j)] = -std::numeric_limits<float>::infinity();
      }
    }
    AttnTileSoftmax(s.data(), T, n, T, n_valid.data(), scale, m.data(), l.data(), corr.data());
    AttnTilePv(s.data(), T, n, n_valid.data(), pb.v.data() + q0 * pb.d_v, pb.d_v, pb.d_v,
               corr.data(), o.data(), pb.d_v);
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t e = 0; e < pb.d_v; ++e)
      out[(t0 + i) * pb.d_v + e] =
          o[static_cast<size_t>(i * pb.d_v + e)] / l[static_cast<size_t>(i)];
  }
}

void TestAttnTileMatchesRef() {
  Rng rng(3);
  struct Shape {
    int64_t d_a, d_b, d_v, p0, n_tok, T;
  };
  for (const Shape& sh :
       {Shape{64, 32, 64, 0, 40, 128}, Shape{64, 32, 64, 150, 13, 128}, Shape{13, 3, 20, 7, 9, 16},
        Shape{16, 0, 7, 0, 30, 32}, Shape{128, 64, 128, 300, 6, 128}, Shape{5, 8, 33, 60, 1, 48}}) {
    for (const bool sparse : {false, true}) {
      SCOPED_TRACE(testing::Message()
                   << "d " << sh.d_a << "+" << sh.d_b << " d_v " << sh.d_v << " p0 " << sh.p0
                   << " n " << sh.n_tok << " T " << sh.T << " sparse " << sparse);
      const test::AttnProblem pb(sh.d_a, sh.d_b, sh.d_v, sh.p0, sh.n_tok, sparse, rng);
      const float scale = 1.0f / std::sqrt(static_cast<float>(sh.d_a + sh.d_b));
      const std::vector<float> want = test::reference(pb, scale);
      std::vector<float> got(want.size());
      RunTiles(pb, sh.T, 0, sh.n_tok, scale, got.data());
      for (int64_t i = 0; i < sh.n_tok; ++i) {
        EXPECT_LE(test::rel_rms(got.data() + i * sh.d_v, want.data() + i * sh.d_v, sh.d_v), 2e-5)
            << "token " << i;
      }
    }
  }
}

// A token's result must not depend on which tokens share its calls (batching, chunked prefill):
// every split of the tokens into calls gives bit-identical outputs.
void TestAttnTileResultsIndependentOfGrouping() {
  Rng rng(4);
  for (const bool sparse : {false, true}) {
    const test::AttnProblem pb(64, 32, 64, 37, 29, sparse, rng);
    const float scale = 0.1f;
    std::vector<float> all(static_cast<size_t>(pb.n_tok * pb.d_v));
    RunTiles(pb, 128, 0, pb.n_tok, scale, all.data());
    for (const int64_t step : {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{7}, int64_t{13}}) {
      std::vector<float> split(all.size());
      for (int64_t t = 0; t < pb.n_tok; t += step)
        RunTiles(pb, 128, t, std::min(pb.n_tok, t + step), scale, split.data());
      ASSERT_EQ(0, std::memcmp(all.data(), split.data(), all.size() * sizeof(float)))
          << "groups of " << step << " sparse " << sparse;
    }
  }
}

void TestAttnTileSoftmaxEdges() {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const int64_t T = 32;
  std::vector<float> s(static_cast<size_t>(3 * T), 5.0f);
  // Row 0: nothing valid; row 1: valid but all masked; row 2: 3 valid with a new maximum.
  s[static_cast<size_t>(T + 0)] = -kInf;
  s[static_cast<size_t>(T + 1)] = -kInf;
  s[static_cast<size_t>(2 * T + 0)] = 1.0f;
  s[static_cast<size_t>(2 * T + 1)] = -kInf;
  s[static_cast<size_t>(2 * T + 2)] = 3.0f;
  const int32_t n_valid[3] = {0, 2, 3};
  float m[3] = {0.5f, 0.5f, 1.0f}, l[3] = {2.0f, 2.0f, 4.0f}, corr[3] = {-1, -1, -1};
  AttnTileSoftmax(s.data(), T, 3, T, n_valid, 2.0f, m, l, corr);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(corr[r], 1.0f);
    EXPECT_EQ(m[r], 0.5f);
    EXPECT_EQ(l[r], 2.0f);
    for (int64_t j = 0; j < T; ++j) EXPECT_EQ(s[static_cast<size_t>(r * T + j)], 0.0f) << r;
  }
  // Scaled scores 2, -inf, 6: M = 6; p = exp(-4), 0, 1; corr = exp(1 - 6); l = 4 corr + sum p.
  EXPECT_EQ(m[2], 6.0f);
  EXPECT_NEAR(corr[2], std::exp(-5.0f), 1e-7f);
  EXPECT_NEAR(s[static_cast<size_t>(2 * T + 0)], std::exp(-4.0f), 1e-7f);
  EXPECT_EQ(s[static_cast<size_t>(2 * T + 1)], 0.0f);
  EXPECT_NEAR(s[static_cast<size_t>(2 * T + 2)], 1.0f, 1e-7f);
  for (int64_t j = 3; j < T; ++j) EXPECT_EQ(s[static_cast<size_t>(2 * T + j)], 0.0f);
  EXPECT_NEAR(l[2], 4.0f * std::exp(-5.0f) + std::exp(-4.0f) + 1.0f, 1e-6f);
  // From the initial state (m = -inf, l = 0): corr 0.
  float m0 = -kInf, l0 = 0.0f, c0 = -1;
  std::vector<float> row(static_cast<size_t>(T), 0.0f);
  const int32_t nv1 = 1;
  AttnTileSoftmax(row.data(), T, 1, T, &nv1, 1.0f, &m0, &l0, &c0);
  EXPECT_EQ(c0, 0.0f);
  EXPECT_EQ(m0, 0.0f);
  EXPECT_NEAR(l0, 1.0f, 1e-7f);
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace dss::cpu {
HWY_BEFORE_TEST(AttnTileTest);
HWY_EXPORT_AND_TEST_P(AttnTileTest, TestAttnTileMatchesRef);
HWY_EXPORT_AND_TEST_P(AttnTileTest, TestAttnTileResultsIndependentOfGrouping);
HWY_EXPORT_AND_TEST_P(AttnTileTest, TestAttnTileSoftmaxEdges);
}  // namespace dss::cpu
#endif
