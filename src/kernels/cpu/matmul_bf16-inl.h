// Per-target tiled matmul with MatmulArith::kBf16Dot (tensor/matrix.h): x rounded to bf16 and
// multiplied by vdpbf16ps. Included by matmul-inl.h (after the tiled f32 path, whose TiledView,
// grouping, fold check and block-sum helpers it shares); compiled on the AVX3 targets only.
#if defined(DSS_KERNELS_CPU_MATMUL_BF16_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DSS_KERNELS_CPU_MATMUL_BF16_INL_H_
#undef DSS_KERNELS_CPU_MATMUL_BF16_INL_H_
#else
#define DSS_KERNELS_CPU_MATMUL_BF16_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/cpu/hwy_util-inl.h"

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// The canonical arithmetic of kBf16Dot, per (row r, token t), of every path and batch:
//   xs(t, c) = bf16(fl(x[t, c] * f)), round to nearest even, f the tile's x factor (TiledView::
//     x_factor: fl(scale * 2^8) for FP8, 1 for BF16);
//   wb(r, c) = the weight as bf16: the BF16 value, or the e4m3 value times 2^-8 (exact; e4m3
//     subnormal codes, below 2^-6 times the block scale, count as zero);
//   per block of kTiledCols columns, pairs (c, c + 1) in order (a ragged last pair pads with zero):
//     s_b = s_b + wb(r, c + 1) * xs(t, c + 1), then s_b = s_b + wb(r, c) * xs(t, c)
//     (vdpbf16ps: exact products, round to nearest even, subnormal results flushed to zero);
//   y[t, r] = (((s_0) + s_1) + s_2) ..., as the f32 path adds its block sums.
// DeepSeek's own bf16 inference rounds x to bf16 too (its FP8 weights are dequantised to bf16 and
// multiplied with torch's bf16 GEMM); the kernel test checks this arithmetic against a scalar
// emulation bit for bit and against the float64 reference within bf16 accuracy.
//
// Layout: a tile column pair (c, c + 1) becomes two vectors of 16 f32-lane pairs, the words of
// columns c and c + 1 interleaved per 128-bit block (InterleaveLower / Upper): vector v, lane l
// holds row 8 * (l / 4) + 4 * v + l % 4 (Bf16Slot).
static_assert(kTiledLanes == 16 && kTiledVecs == 2, "the bf16-dot path is written for AVX-512");

constexpr int64_t Bf16Slot(int64_t r) { return (r % 8 / 4) * 16 + 4 * (r / 8) + r % 4; }

using DU16x32 = hn::ScalableTag<uint16_t>;
using DU32x16 = hn::ScalableTag<uint32_t>;
using VPairs = hn::Vec<DU32x16>;  // 16 lanes of (high: odd column, low: even column) bf16 pairs

// Tile column at p (32 rows) as 32 bf16 words in row order. kFolded (FP8): the e4m3 value times
// 2^-120 (the caller's x factor carries 2^112), else times 2^-8. e4m3 subnormals come out as bf16
// subnormals, which vdpbf16ps reads as zero (the canonical arithmetic above; no rebias for them).
template <bool kFolded>
HWY_INLINE hn::Vec<DU16x32> Bf16Column(const uint16_t* HWY_RESTRICT p) {
  return hn::LoadU(DU16x32(), p);
}
template <bool kFolded>
HWY_INLINE hn::Vec<DU16x32> Bf16Column(const uint8_t* HWY_RESTRICT p) {
  const hn::RebindToSigned<DU16x32> di;
  const hn::Rebind<int8_t, decltype(di)> d8;
  // The code sign-extended to 16 bits, shifted left by 4 and masked to s.eeee.mmm at bf16's
  // sign, low exponent and mantissa bits: the value times 2^-120, exactly.
  const auto raw = hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const int8_t*>(p)));
  auto w = hn::And(hn::ShiftLeft<4>(raw), hn::Set(di, static_cast<int16_t>(0x87F0)));
  if constexpr (!kFolded) {  // normal codes' exponent + 112: the value times 2^-8
    const auto normal = hn::Ne(hn::And(raw, hn::Set(di, 0x78)), hn::Zero(di));
    w = hn::IfThenElse(normal, hn::Add(w, hn::Set(di, static_cast<int16_t>(112 << 7))), w);
  }
  return hn::BitCast(DU16x32(), w);
}

// The pair vectors of tile columns c (at p) and c + 1 (at p + kTileRows); `second` false: the
// ragged last column, paired with zero.
template <bool kFolded, typename T>
HWY_INLINE void Bf16PairColumns(const T* HWY_RESTRICT p, bool second, VPairs& v0, VPairs& v1) {
  const DU16x32 d16;
  const auto a = Bf16Column<kFolded>(p);
  const auto b = second ? Bf16Column<kFolded>(p + kTileRows) : hn::Zero(d16);
  v0 = hn::BitCast(DU32x16(), hn::InterleaveLower(d16, a, b));
  v1 = hn::BitCast(DU32x16(), hn::InterleaveUpper(d16, a, b));
}

// bf16(v) round to nearest even, in the upper half of each 32-bit lane (the lower half is junk).
HWY_INLINE hn::Vec<DU32x16> RoundToBf16High(hn::Vec<hn::ScalableTag<float>> v) {
  const DU32x16 du;
  const auto u = hn::BitCast(du, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
  return hn::Add(u, hn::Add(lsb, hn::Set(du, 0x7FFFu)));
}
inline uint16_t RoundToBf16Scalar(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return static_cast<uint16_t>((u + ((u >> 16) & 1u) + 0x7FFFu) >> 16);
}

// xs pairs of nc columns of one token row x (already offset to the block) times f: out[p] =
// bf16(fl(x[2p + 1] * f)) << 16 | bf16(fl(x[2p] * f)); an odd nc pairs the last column with +0.
HWY_INLINE void Bf16PairsOfX(const float* HWY_RESTRICT x, int64_t nc, float f,
                             uint32_t* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  const DU16x32 d16;
  const auto vf = hn::Set(df, f);
  int64_t c = 0;
  for (; c + 32 <= nc; c += 32) {
    const auto lo = RoundToBf16High(hn::Mul(hn::LoadU(df, x + c), vf));
    const auto hi = RoundToBf16High(hn::Mul(hn::LoadU(df, x + c + 16), vf));
    const auto pairs = hn::ConcatOdd(d16, hn::BitCast(d16, hi), hn::BitCast(d16, lo));
    hn::StoreU(hn::BitCast(DU32x16(), pairs), DU32x16(), out + c / 2);
  }
  for (; c < nc; c += 2) {
    const uint32_t even = RoundToBf16Scalar(x[c] * f);
    const uint32_t odd = c + 1 < nc ? RoundToBf16Scalar(x[c + 1] * f) : 0u;
    out[c / 2] = odd << 16 | even;
  }
}

// One column-pair step of a tile: acc[v][j] += pair vector v (w0, w1) . token j's xs pair p.
template <int kG>
HWY_INLINE void DotPairColumn(VPairs w0, VPairs w1, const uint32_t* const* xp, int64_t p,
                              hn::Vec<hn::ScalableTag<float>> (&acc)[kTiledVecs][kG]) {
  const DU32x16 du;
  for (int j = 0; j < kG; ++j) {
    const auto xv = hn::Set(du, xp[j][p]);
    acc[0][j] = DotBf16Pairs(acc[0][j], w0, xv);
    acc[1][j] = DotBf16Pairs(acc[1][j], w1, xv);
  }
}

// GEMV block: kNT tiles' columns [c0, c0 + nc) (tile t at wt + t * tile_stride) x kG tokens' xs
// pairs (tile t, token j at xp[t * kG + j], pair index relative to c0), block sums stored to /
// added into accb + t * accb_stride (token j's 32 sums at + j * kTileRows, Bf16Slot order).
template <int kG, int kNT, bool kFolded, typename T>
HWY_INLINE void Bf16GemvBlock(const T* HWY_RESTRICT wt, int64_t tile_stride, int64_t c0, int64_t nc,
                              const uint32_t* const* xp, bool first, int64_t prefetch_bytes,
                              float* HWY_RESTRICT accb, int64_t accb_stride) {
  const hn::ScalableTag<float> df;
  hn::Vec<decltype(df)> acc[kNT][kTiledVecs][kG];
  for (int t = 0; t < kNT; ++t) ZeroAcc<kG>(df, acc[t]);
  const int64_t n_full = nc / 2;
  auto step = [&](int64_t p, bool second) HWY_ATTR {
    for (int t = 0; t < kNT; ++t) {
      const T* HWY_RESTRICT wc = wt + t * tile_stride + (c0 + 2 * p) * kTileRows;
      // A pair of columns is 64 (FP8) or 128 (BF16) bytes: one prefetch per 64-byte line.
      for (size_t b = 0; b < sizeof(T); ++b) {
        hwy::Prefetch(reinterpret_cast<const uint8_t*>(wc) + prefetch_bytes + 64 * b);
      }
      VPairs w0, w1;
      Bf16PairColumns<kFolded>(wc, second, w0, w1);
      DotPairColumn<kG>(w0, w1, xp + t * kG, p, acc[t]);
    }
  };
  for (int64_t p = 0; p < n_full; ++p) step(p, true);
  if (nc % 2 != 0) step(n_full, false);
  for (int t = 0; t < kNT; ++t) StoreOrAdd<kG>(df, acc[t], first, accb + t * accb_stride);
}

template <typename T, bool kFolded>
struct Bf16GemvFn {
  template <int kG>
  struct F {  // nt tiles: GemvTiles(kG) at a time, then one by one
    static void run(int nt, const T* wt, int64_t tile_stride, int64_t c0, int64_t nc,
                    const uint32_t* const* xp, bool first, int64_t prefetch_bytes, float* accb,
                    int64_t accb_stride) {
      constexpr int kNT = GemvTiles(kG);
      int t = 0;
      if constexpr (kNT > 1) {
        for (; t + kNT <= nt; t += kNT) {
          Bf16GemvBlock<kG, kNT, kFolded>(wt + t * tile_stride, tile_stride, c0, nc, xp + t * kG,
                                          first, prefetch_bytes, accb + t * accb_stride,
                                          accb_stride);
        }
      }
      for (; t < nt; ++t) {
        Bf16GemvBlock<kG, 1, kFolded>(wt + t * tile_stride, tile_stride, c0, nc, xp + t * kG, first,
                                      prefetch_bytes, accb + t * accb_stride, accb_stride);
      }
    }
  };
};

// Token counts from which the GEMM path (a decoded panel per block) takes over from decoding in
// registers per token group: FP8 as the f32 path; BF16's pair decode (two loads and two
// interleaves per 64 weights) is cheap enough to redo per group of 6 up to 16 tokens
// (matmul_bench 2 threads, 3 alternating rounds: BM_LmHead_BF16_Bf16Dot/16 192/275/222 ->
// 242/336/256 GFLOP/s; FP8 in registers at 16 tokens was slower, BM_Gemv_FP8_Bf16Dot/16
// 362-396 -> 324-346).
template <typename T>
inline constexpr int64_t kBf16GemmMinTokens =
    std::is_same_v<T, uint16_t> ? 17 : kTiledGemmMinTokens<T>;

// GEMV: rows [r_begin, r_end) of the nt (<= kMaxGemvTiles) tiles from ti for n_tok
// (< kBf16GemmMinTokens<T>) tokens (FP8: their |x| ranges for the fold, as the f32 path).
template <typename T>
HWY_INLINE void Bf16GemvTiles(const TiledView<T>& m, int64_t ti, int nt,
                              const float* HWY_RESTRICT x, int64_t n_tok, const AbsRange* ranges,
                              float* HWY_RESTRICT y, int64_t r_begin, int64_t r_end) {
  constexpr int64_t kMaxTok = kBf16GemmMinTokens<T>;
  constexpr int64_t kAccStride = kMaxTok * kTileRows;
  constexpr int64_t kPairs = kTiledCols / 2;
  HWY_ALIGN float accb[kMaxGemvTiles * kAccStride];
  HWY_ALIGN uint32_t xsp[kMaxGemvTiles * kMaxTok * kPairs];  // [tile][token][pair]
  const T* wt = m.tile(ti);
  const int64_t tile_stride = kTileRows * m.n_cols;
  for (int64_t c0 = 0; c0 < m.n_cols; c0 += kTiledCols) {
    const int64_t nc = std::min(kTiledCols, m.n_cols - c0);
    float f[kMaxGemvTiles] = {};
    for (int t = 0; t < nt; ++t) f[t] = m.x_factor(ti + t, c0);
    int64_t prefetch_bytes = kPrefetchBytes;
    for (int64_t j0 = 0, g = 0; j0 < n_tok; j0 += g) {
      g = NextGroup(n_tok - j0);
      bool folded = false;
      if constexpr (std::is_same_v<T, uint8_t>) {
        folded = true;
        for (int t = 0; t < nt; ++t) folded = folded && Fp8FoldsExactly(f[t], ranges + j0, g);
      }
      const uint32_t* xp[kMaxGemvTiles * kMaxTok];
      for (int t = 0; t < nt; ++t) {
        const float ft = folded ? f[t] * kTiledFp8Fold : f[t];
        for (int64_t j = 0; j < g; ++j) {
          uint32_t* out = xsp + (t * kMaxTok + j) * kPairs;
          if (t > 0 && f[t] == f[0]) {  // tiles in one 128-row scale block share xs
            xp[t * g + j] = xp[j];
          } else {
            Bf16PairsOfX(x + (j0 + j) * m.n_cols + c0, nc, ft, out);
            xp[t * g + j] = out;
          }
        }
      }
      const auto* xpc = static_cast<const uint32_t* const*>(xp);
      float* acc = accb + j0 * kTileRows;
      if (folded) {
        WithGroup<Bf16GemvFn<T, true>::template F>(static_cast<int>(g), nt, wt, tile_stride, c0, nc,
                                                   xpc, c0 == 0, prefetch_bytes, acc, kAccStride);
      } else {
        WithGroup<Bf16GemvFn<T, false>::template F>(static_cast<int>(g), nt, wt, tile_stride, c0,
                                                    nc, xpc, c0 == 0, prefetch_bytes, acc,
                                                    kAccStride);
      }
      prefetch_bytes += kTiledCols * kTileRows * static_cast<int64_t>(sizeof(T));
    }
  }
  for (int t = 0; t < nt; ++t) {
    StoreTileRows<Bf16Slot>(accb + t * kAccStride, n_tok, ti + t, r_begin, r_end, m.n_rows, y);
  }
}

// The block sums of the decoded pair panel wp ([n_pairs][2 vectors]) x xs pairs of kG tokens
// (xsp[j * kTiledCols / 2 + p]), stored to / added into accb; column pair p's step prefetches
// prefetch + p * prefetch_stride (null: none).
template <int kG>
HWY_INLINE void Bf16GemmMicro(const uint32_t* HWY_RESTRICT wp, int64_t n_pairs,
                              const uint32_t* HWY_RESTRICT xsp, bool first,
                              float* HWY_RESTRICT accb, const uint8_t* prefetch,
                              int64_t prefetch_stride) {
  const hn::ScalableTag<float> df;
  const DU32x16 du;
  hn::Vec<decltype(df)> acc[kTiledVecs][kG];
  ZeroAcc<kG>(df, acc);
  const uint32_t* xp[kG];
  for (int j = 0; j < kG; ++j) xp[j] = xsp + j * (kTiledCols / 2);
  for (int64_t p = 0; p < n_pairs; ++p) {
    if (prefetch != nullptr) {  // a pair's bytes: one prefetch per 64-byte line
      for (int64_t b = 0; b < prefetch_stride; b += 64)
        hwy::Prefetch(prefetch + p * prefetch_stride + b);
    }
    DotPairColumn<kG>(hn::Load(du, wp + p * 32), hn::Load(du, wp + p * 32 + 16),
                      static_cast<const uint32_t* const*>(xp), p, acc);
  }
  StoreOrAdd<kG>(df, acc, first, accb);
}
template <int kG>
struct Bf16GemmMicroFn {
  static void run(const uint32_t* wp, int64_t n_pairs, const uint32_t* xsp, bool first, float* accb,
                  const uint8_t* prefetch, int64_t prefetch_stride) {
    Bf16GemmMicro<kG>(wp, n_pairs, xsp, first, accb, prefetch, prefetch_stride);
  }
};

// GEMM: rows [r_begin, r_end) of the nt (<= kTilesPerScaleBlock) tiles from ti, which share one
// 128-row scale block, for n_tok tokens: per block of kTiledTokBlock tokens and kTiledCols columns
// the tokens' xs pairs are computed once for all nt tiles (12 KiB), then per tile its pair
// vectors are decoded once (8 KiB) and multiplied by micro-kernels of up to kTiledGroup tokens
// while the next tile's (or the next block's) weights are prefetched.
inline constexpr int kTilesPerScaleBlock = static_cast<int>(kFp8BlockSize / kTileRows);
template <typename T>
HWY_INLINE void Bf16GemmTiles(const TiledView<T>& m, int64_t ti, int nt,
                              const float* HWY_RESTRICT x, int64_t n_tok, float* HWY_RESTRICT y,
                              int64_t r_begin, int64_t r_end) {
  constexpr int64_t kPairs = kTiledCols / 2;
  constexpr int64_t kAccStride = kTiledTokBlock * kTileRows;
  HWY_ALIGN uint32_t wp[kPairs * kTileRows];
  HWY_ALIGN uint32_t xsp[kTiledTokBlock * kPairs];
  HWY_ALIGN float accb[kTilesPerScaleBlock * kAccStride];
  const DU32x16 du;
  const int64_t tile_stride = kTileRows * m.n_cols;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kTiledTokBlock) {
    const int64_t n_t = std::min(kTiledTokBlock, n_tok - t0);
    for (int64_t c0 = 0; c0 < m.n_cols; c0 += kTiledCols) {
      const int64_t nc = std::min(kTiledCols, m.n_cols - c0);
      const int64_t n_pairs = (nc + 1) / 2;
      const float f = m.x_factor(ti, c0);
      for (int64_t j = 0; j < n_t; ++j) {
        Bf16PairsOfX(x + (t0 + j) * m.n_cols + c0, nc, f, xsp + j * kPairs);
      }
      for (int t = 0; t < nt; ++t) {
        const T* wt = m.tile(ti + t);
        for (int64_t p = 0; p < n_pairs; ++p) {
          VPairs w0, w1;
          Bf16PairColumns<false>(wt + (c0 + 2 * p) * kTileRows, 2 * p + 1 < nc, w0, w1);
          hn::Store(w0, du, wp + p * 32);
          hn::Store(w1, du, wp + p * 32 + 16);
        }
        const T* next = t + 1 < nt ? wt + tile_stride + c0 * kTileRows
                                   : m.tile(ti) + (c0 + kTiledCols) * kTileRows;
        for (int64_t j0 = 0, g = 0; j0 < n_t; j0 += g) {
          g = NextGroup(n_t - j0);
          WithGroup<Bf16GemmMicroFn>(static_cast<int>(g), static_cast<const uint32_t*>(wp), n_pairs,
                                     static_cast<const uint32_t*>(xsp + j0 * kPairs), c0 == 0,
                                     accb + t * kAccStride + j0 * kTileRows,
                                     j0 == 0 ? reinterpret_cast<const uint8_t*>(next) : nullptr,
                                     2 * kTileRows * static_cast<int64_t>(sizeof(T)));
        }
      }
    }
    for (int t = 0; t < nt; ++t) {
      StoreTileRows<Bf16Slot>(accb + t * kAccStride, n_t, ti + t, r_begin, r_end, m.n_rows,
                              y + t0 * m.n_rows);
    }
  }
}

// Rows [r_begin, r_end) of a tiled kBf16Dot matrix (as TiledRows).
template <typename T>
void Bf16TiledRows(const TiledView<T>& m, const float* HWY_RESTRICT x, int64_t n_tok,
                   float* HWY_RESTRICT y, int64_t r_begin, int64_t r_end) {
  TiledRowsWith<kBf16GemmMinTokens<T>, kTilesPerScaleBlock>(
      m, x, n_tok, r_begin, r_end,
      [&](int64_t ti, int nt, const AbsRange* ranges)
          HWY_ATTR { Bf16GemvTiles(m, ti, nt, x, n_tok, ranges, y, r_begin, r_end); },
      [&](int64_t ti, int nt) HWY_ATTR { Bf16GemmTiles(m, ti, nt, x, n_tok, y, r_begin, r_end); });
}
#endif  // HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_KERNELS_CPU_MATMUL_BF16_INL_H_
