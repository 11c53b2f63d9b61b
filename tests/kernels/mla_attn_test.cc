// kernels/cpu/mla_attn vs kernels/ref on every compiled Highway target this CPU supports: rows
// written by the real KvCache (f32, bf16, fp8 layouts) behind a shuffled page table, dense and
// sparse position lists, one to several split-K parts merged. Row decoding must be exact; the
// attention output within 2e-5 relative RMS of the double-precision reference (f32 sums in a
// different order, std::exp in both).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/kernels/mla_attn_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "kernels/cpu/mla_attn-inl.h"

#ifndef DSS_TESTS_KERNELS_MLA_ATTN_TEST_HELPERS_
#define DSS_TESTS_KERNELS_MLA_ATTN_TEST_HELPERS_
#include "base/rng.h"
#include "kernels/ref/ref_kernels.h"
#include "kv/kv_cache.h"
#include "tests/kernels/bf16_round.h"
#include "tests/kernels/rel_rms.h"
namespace dss::test {
// A one-layer cache of n_pos positions with random rows, and its view through a shuffled page
// table (pages handed out in a scrambled order).
struct PagedRows {
  PagedRows(DType dtype, int32_t R, int32_t dr, int32_t page, int32_t n_pos, dss::Rng& rng)
      : kv(KvLayout{1, R, dr, page, 0, dtype}, (n_pos + page - 1) / page + 2) {
    const int32_t n_pages = kv.n_pages();
    pages.resize(static_cast<size_t>(n_pages));
    std::iota(pages.begin(), pages.end(), 0);
    for (int32_t i = n_pages - 1; i > 0; --i) {
      std::swap(pages[static_cast<size_t>(i)],
                pages[rng.next_u64() % static_cast<uint64_t>(i + 1)]);
    }
    std::vector<float> row(static_cast<size_t>(R + dr));
    for (int32_t p = 0; p < n_pos; ++p) {
      // Blocks of very different magnitude so the fp8 scales differ per block.
      for (int32_t i = 0; i < R + dr; ++i) {
        row[static_cast<size_t>(i)] =
            rng.normal() * (i < R ? std::ldexp(1.0f, (i / 128) * 3 - 2) : 1.0f);
      }
      kv.store(0, pages[static_cast<size_t>(p / page)] * page + p % page, row.data());
    }
    view.rows = kv.latent_rows(0);
    view.row_bytes = static_cast<int64_t>(kv.layout().latent_row_bytes());
    view.dtype = dtype;
    view.d_latent = R;
    view.d_rope = dr;
    view.page_table = pages.data();
    view.page_size = page;
  }
  KvCache kv;
  std::vector<int32_t> pages;
  cpu::MlaCacheView view;
};
// A sorted subset of positions [0, n_pos): the last one and about a third of the others.
inline std::vector<int32_t> SparseSubset(int32_t n_pos, dss::Rng& rng) {
  std::vector<int32_t> sparse;
  for (int32_t p = 0; p < n_pos; ++p) {
    if (p == n_pos - 1 || rng.next_u64() % 3 == 0) sparse.push_back(p);
  }
  return sparse;
}
}  // namespace dss::test
#endif

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {

void TestMlaLoadRowsExact() {
  Rng rng(1);
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
    for (int32_t R : {64, 200, 512}) {
      test::PagedRows pr(dt, R, 16, 7, 40, rng);
      std::vector<float> lat(40 * static_cast<size_t>(R)), pe(40 * 16);
      MlaLoadRows(pr.view, nullptr, 0, 40, lat.data(), pe.data(), 0);
      std::vector<float> rl(static_cast<size_t>(R)), rp(16);
      for (int32_t p = 0; p < 40; ++p) {
        ref::mla_load_row(pr.view, p, rl.data(), rp.data());
        for (int32_t i = 0; i < R; ++i)
          ASSERT_EQ(lat[static_cast<size_t>(p * R + i)], rl[static_cast<size_t>(i)]) << p;
        for (int32_t i = 0; i < 16; ++i)
          ASSERT_EQ(pe[static_cast<size_t>(p * 16 + i)], rp[static_cast<size_t>(i)]) << p;
      }
      // Scattered positions, rows [3, 20) of the list, prefetching ahead up to its end (the
      // prefetches are hints: the decoded rows are the same).
      std::vector<int32_t> pos;
      for (int32_t p = 39; p >= 0; p -= 2) pos.push_back(p);
      const auto n_pos = static_cast<int64_t>(pos.size());
      MlaLoadRows(pr.view, pos.data(), 3, 17, lat.data(), pe.data(), n_pos);
      for (int64_t j = 0; j < 17; ++j) {
        ref::mla_load_row(pr.view, pos[static_cast<size_t>(3 + j)], rl.data(), rp.data());
        for (int32_t i = 0; i < R; ++i)
          ASSERT_EQ(lat[static_cast<size_t>(j * R + i)], rl[static_cast<size_t>(i)]) << j;
        for (int32_t i = 0; i < 16; ++i)
          ASSERT_EQ(pe[static_cast<size_t>(j * 16 + i)], rp[static_cast<size_t>(i)]) << j;
      }
    }
  }
}

// The attention over pos[0, n) as n_parts split-K partials of `partial` (MlaAttnPartial or
// MlaAttnPartialBf16), merged: out [H, R].
template <class Partial>
std::vector<float> PartsMerged(const Partial& partial, const cpu::MlaCacheView& view,
                               const int32_t* pos, int64_t n, const std::vector<float>& q_lat,
                               const std::vector<float>& q_pe, int32_t H, float scale,
                               int32_t n_parts) {
  const int32_t R = view.d_latent, dr = view.d_rope;
  std::vector<float> scratch(static_cast<size_t>(mla_attn_scratch_floats(H, R, dr)));
  std::vector<float> m(static_cast<size_t>(n_parts * H)), l(m.size()),
      o(static_cast<size_t>(n_parts * H * R));
  for (int32_t i = 0; i < n_parts; ++i) {
    partial(view, pos, n * i / n_parts, n * (i + 1) / n_parts, q_lat.data(), q_pe.data(), H, scale,
            scratch.data(), m.data() + i * H, l.data() + i * H,
            o.data() + static_cast<size_t>(i) * H * R);
  }
  std::vector<float> out(static_cast<size_t>(H * R));
  MlaAttnMerge(n_parts, m.data(), l.data(), o.data(), H, R, out.data());
  return out;
}

void TestMlaAttnMatchesRef() {
  Rng rng(2);
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
    for (auto [R, dr, H] : {std::tuple{64, 16, 1}, std::tuple{128, 16, 8}, std::tuple{200, 8, 3},
                            std::tuple{512, 64, 4}}) {
      for (int32_t n_pos : {1, 5, 33, 130}) {
        SCOPED_TRACE(testing::Message() << "dtype " << static_cast<int>(dt) << " R " << R << " H "
                                        << H << " n " << n_pos);
        test::PagedRows pr(dt, R, dr, 16, n_pos, rng);
        const auto q_lat = [&] {
          std::vector<float> v(static_cast<size_t>(H * R));
          for (auto& x : v) x = rng.normal();
          return v;
        }();
        std::vector<float> q_pe(static_cast<size_t>(H * dr));
        for (auto& x : q_pe) x = rng.normal();
        const float scale = 0.5f / std::sqrt(static_cast<float>(R));
        // Dense and a sparse sorted subset.
        const std::vector<int32_t> sparse = test::SparseSubset(n_pos, rng);
        for (const bool dense : {true, false}) {
          const int32_t* pos = dense ? nullptr : sparse.data();
          const int64_t n = dense ? n_pos : static_cast<int64_t>(sparse.size());
          std::vector<float> want(static_cast<size_t>(H * R));
          ref::mla_attn(pr.view, pos, n, q_lat.data(), q_pe.data(), H, scale, want.data());
          for (int32_t n_parts : {1, 2, 5}) {
            const std::vector<float> got =
                PartsMerged(MlaAttnPartial, pr.view, pos, n, q_lat, q_pe, H, scale, n_parts);
            EXPECT_LE(test::rel_rms(got.data(), want.data(), static_cast<int64_t>(got.size())),
                      2e-5)
                << "parts " << n_parts << " dense " << dense;
          }
        }
      }
    }
  }
}

// mla_attn_partial_bf16 against the double reference fed its contract's query (q rounded to bf16
// after scaling: round to nearest even, an f32 subnormal as zero; scale 1), per element: P V's
// probabilities rounded to bf16 (each off by at most 2^-8 of itself, bf16's unit roundoff) move
// an output by at most 2^-8 of S = sum_p p |latent(p)| / sum_p p; 2^-12 of S more covers the f32
// scores, sums and exp (the f32 kernel's test holds those to 2e-5 relative RMS). And the rounding
// shows: some element is off by more than 2^-10 of its S (measured here: ~3.5e-3). A call over a
// subset of the heads gives their bits of the all-heads call.
void TestMlaAttnBf16MatchesRef() {
  if (!kTargetHasBf16Dot || !__builtin_cpu_supports("avx512bf16")) {
    fprintf(stderr, "TestMlaAttnBf16MatchesRef: skipped on %s (no AVX512-BF16)\n",
            hwy::TargetName(HWY_TARGET));
    return;
  }
  Rng rng(3);
  double worst_all = 0;  // the largest |error| / S of any element, any case
  // Heads 17: two head vectors, the second padded; R 200: a latent tail past the last 16 and 32.
  for (auto [R, dr, H] : {std::tuple{64, 16, 1}, std::tuple{128, 16, 8}, std::tuple{200, 8, 3},
                          std::tuple{256, 32, 16}, std::tuple{512, 64, 17}}) {
    for (int32_t n_pos : {1, 5, 33, 130}) {
      SCOPED_TRACE(testing::Message() << "R " << R << " H " << H << " n " << n_pos);
      test::PagedRows pr(DType::kBF16, R, dr, 16, n_pos, rng);
      std::vector<float> q_lat(static_cast<size_t>(H * R)), q_pe(static_cast<size_t>(H * dr));
      for (auto& x : q_lat) x = rng.normal();
      for (auto& x : q_pe) x = rng.normal();
      const float scale = 0.5f / std::sqrt(static_cast<float>(R));
      std::vector<float> qs_lat(q_lat.size()), qs_pe(q_pe.size());
      for (size_t i = 0; i < q_lat.size(); ++i) qs_lat[i] = test::bf16_round(scale * q_lat[i]);
      for (size_t i = 0; i < q_pe.size(); ++i) qs_pe[i] = test::bf16_round(scale * q_pe[i]);
      const std::vector<int32_t> sparse = test::SparseSubset(n_pos, rng);
      for (const bool dense : {true, false}) {
        const int32_t* pos = dense ? nullptr : sparse.data();
        const int64_t n = dense ? n_pos : static_cast<int64_t>(sparse.size());
        std::vector<float> want(static_cast<size_t>(H * R));
        ref::mla_attn(pr.view, pos, n, qs_lat.data(), qs_pe.data(), H, 1.0f, want.data());
        // S[h, c] from the same scores in double.
        std::vector<float> lat(static_cast<size_t>(n * R)), pe(static_cast<size_t>(n * dr));
        for (int64_t i = 0; i < n; ++i) {
          ref::mla_load_row(pr.view, pos ? pos[i] : static_cast<int32_t>(i), lat.data() + i * R,
                            pe.data() + i * dr);
        }
        std::vector<double> S(want.size());
        for (int32_t h = 0; h < H; ++h) {
          std::vector<double> sc(static_cast<size_t>(n));
          double mx = -1e300, sum = 0;
          for (int64_t i = 0; i < n; ++i) {
            double d = 0;
            for (int32_t c = 0; c < R; ++c) d += double{qs_lat[h * R + c]} * lat[i * R + c];
            for (int32_t c = 0; c < dr; ++c) d += double{qs_pe[h * dr + c]} * pe[i * dr + c];
            sc[static_cast<size_t>(i)] = d;
            mx = std::max(mx, d);
          }
          for (auto& v : sc) sum += (v = std::exp(v - mx));
          for (int32_t c = 0; c < R; ++c) {
            double a = 0;
            for (int64_t i = 0; i < n; ++i)
              a += sc[static_cast<size_t>(i)] * std::abs(lat[i * R + c]);
            S[static_cast<size_t>(h * R + c)] = a / sum;
          }
        }
        for (int32_t n_parts : {1, 2, 5}) {
          const std::vector<float> got =
              PartsMerged(MlaAttnPartialBf16, pr.view, pos, n, q_lat, q_pe, H, scale, n_parts);
          double worst = 0;
          for (size_t i = 0; i < got.size(); ++i) {
            const double err = std::abs(double{got[i]} - want[i]);
            ASSERT_LE(err, (0x1p-8 + 0x1p-12) * S[i] + 1e-30)
                << "parts " << n_parts << " dense " << dense << " element " << i;
            worst = std::max(worst, err / S[i]);
          }
          worst_all = std::max(worst_all, worst);
        }
        // A call over heads [1, H) gives those heads' bits of the all-heads call (the model splits
        // heads across threads at batch 1, mla.cc). With H = 17 the all-heads call scores 6 rows
        // at a time (two head vectors) and the 16-head call 12 (one vector): this also checks that
        // the 12-row scoring gives the 6-row scoring's bits.
        if (H > 1) {
          std::vector<float> scratch(static_cast<size_t>(mla_attn_scratch_floats(H, R, dr)));
          std::vector<float> m(static_cast<size_t>(H)), l(m.size()), o(static_cast<size_t>(H * R));
          std::vector<float> ms(m.size()), ls(m.size()), os(o.size());
          MlaAttnPartialBf16(pr.view, pos, 0, n, q_lat.data(), q_pe.data(), H, scale,
                             scratch.data(), m.data(), l.data(), o.data());
          MlaAttnPartialBf16(pr.view, pos, 0, n, q_lat.data() + R, q_pe.data() + dr, H - 1, scale,
                             scratch.data(), ms.data(), ls.data(), os.data());
          ASSERT_EQ(std::memcmp(m.data() + 1, ms.data(), 4 * static_cast<size_t>(H - 1)), 0);
          ASSERT_EQ(std::memcmp(l.data() + 1, ls.data(), 4 * static_cast<size_t>(H - 1)), 0);
          ASSERT_EQ(std::memcmp(o.data() + R, os.data(), 4 * static_cast<size_t>((H - 1) * R)), 0)
              << "dense " << dense;
        }
      }
    }
  }
  fprintf(stderr, "TestMlaAttnBf16MatchesRef: worst |error| / S %.3g (2^-8 = %.3g)\n", worst_all,
          0x1p-8);
  EXPECT_GT(worst_all, 0x1p-10) << "the bf16 rounding of the probabilities should show";
}

// The bf16 attention's query pair rows (QueryPairRows: per head row, then 16 x 16 transposes):
// word (p, h) = bf16(fl(scale * q_h[2p])) low, bf16(fl(scale * q_h[2p + 1])) high, q_h = q_lat_h
// then q_pe_h, heads [H, Hp) zero: what transposing scale * q and pairing its rows gave (the
// kernel's general path, Bf16PairRowsInPlace), bit for bit, against both. One and two head
// blocks, the second padded, the 671B shapes.
void TestMlaQueryPairRows() {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if (!__builtin_cpu_supports("avx512bf16")) {
    fprintf(stderr, "TestMlaQueryPairRows: skipped (no AVX512-BF16)\n");
    return;
  }
  Rng rng(11);
  for (auto [R, dr, H] : {std::tuple{256, 32, 16}, std::tuple{256, 32, 8}, std::tuple{512, 64, 17},
                          std::tuple{512, 64, 128}}) {
    SCOPED_TRACE(testing::Message() << "R " << R << " dr " << dr << " H " << H);
    const int64_t Hp = mla_heads_padded(H), P = (R + dr) / 2;
    std::vector<float> q_lat(static_cast<size_t>(H * R)), q_pe(static_cast<size_t>(H * dr));
    for (auto& x : q_lat) x = rng.normal();
    for (auto& x : q_pe) x = rng.normal();
    const float scale = 0.37f;
    std::vector<float> tmp(static_cast<size_t>(16 * P)), out(static_cast<size_t>(P * Hp), 1.0f);
    const uint32_t* got =
        QueryPairRows(q_lat.data(), R, q_pe.data(), dr, H, Hp, scale, tmp.data(), out.data());
    // The general path: scale * q transposed to heads in lanes, its rows paired in place.
    std::vector<float> qt(static_cast<size_t>((R + dr) * Hp));
    for (int64_t c = 0; c < R + dr; ++c) {
      for (int64_t h = 0; h < Hp; ++h)
        qt[static_cast<size_t>(c * Hp + h)] =
            h < H ? scale * (c < R ? q_lat[h * R + c] : q_pe[h * dr + c - R]) : 0.0f;
    }
    const uint32_t* general = Bf16PairRowsInPlace(qt.data(), R + dr, Hp);
    ASSERT_EQ(std::memcmp(got, general, 4 * static_cast<size_t>(P * Hp)), 0);
    auto bits = [](float v) {
      uint32_t u;
      std::memcpy(&u, &v, 4);
      return u >> 16;
    };
    for (int64_t p = 0; p < P; ++p) {
      for (int64_t h = 0; h < Hp; ++h) {
        uint32_t want = 0;
        if (h < H) {
          auto q = [&](int64_t c) { return c < R ? q_lat[h * R + c] : q_pe[h * dr + c - R]; };
          want = bits(test::bf16_round(scale * q(2 * p))) |
                 bits(test::bf16_round(scale * q(2 * p + 1))) << 16;
        }
        ASSERT_EQ(got[p * Hp + h], want) << "pair " << p << " head " << h;
      }
    }
  }
#endif
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace dss::cpu {
HWY_BEFORE_TEST(MlaAttnTest);
HWY_EXPORT_AND_TEST_P(MlaAttnTest, TestMlaLoadRowsExact);
HWY_EXPORT_AND_TEST_P(MlaAttnTest, TestMlaAttnMatchesRef);
HWY_EXPORT_AND_TEST_P(MlaAttnTest, TestMlaAttnBf16MatchesRef);
HWY_EXPORT_AND_TEST_P(MlaAttnTest, TestMlaQueryPairRows);
}  // namespace dss::cpu
#endif
