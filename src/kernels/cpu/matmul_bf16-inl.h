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

#include "base/check.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/cpu/hwy_util-inl.h"

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// The canonical arithmetic of kBf16Dot, per (row r, token t), of every path and batch:
//   xs(t, c) = bf16(fl(x[t, c] * f)), round to nearest even with an f32 subnormal product as zero
//     (vcvtne2ps2bf16), f the tile's x factor (TiledView::x_factor: fl(scale * 2^8) for FP8, 1 for
//     BF16);
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
// Layout: a tile column pair (c, c + 1) becomes two vectors of 16 f32-lane pairs (high word:
// column c + 1, low word: column c).
//   kTiled: the words of columns c and c + 1 interleaved per 128-bit block (InterleaveLower /
//     Upper): vector v, lane l holds row 8 * (l / 4) + 4 * v + l % 4 (Bf16Slot).
//   kTiledPairs (kPaired): the pair is stored interleaved, so vector v is its 32 elements from
//     32 v on, decoded in place: lane l holds row 16 v + l (RowSlot), no interleave.
// Both give every (row, token) the same products in the same order, so the two layouts' results
// are bit-identical.
static_assert(kTiledLanes == 16 && kTiledVecs == 2, "the bf16-dot path is written for AVX-512");

constexpr int64_t Bf16Slot(int64_t r) { return (r % 8 / 4) * 16 + 4 * (r / 8) + r % 4; }
constexpr int64_t RowSlot(int64_t r) { return r; }

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

// The pair vectors of tile columns c and c + 1, which start at p; kTiled: column c + 1 at
// p + kTileRows, `second` false: the ragged last column, paired with zero; kTiledPairs (kPaired):
// the pair's 64 interleaved elements (`second` is always true: n_cols is even).
template <bool kFolded, bool kPaired, typename T>
HWY_INLINE void Bf16PairColumns(const T* HWY_RESTRICT p, bool second, VPairs& v0, VPairs& v1) {
  const DU16x32 d16;
  const auto a = Bf16Column<kFolded>(p);
  const auto b = kPaired || second ? Bf16Column<kFolded>(p + kTileRows) : hn::Zero(d16);
  if constexpr (kPaired) {  // stored interleaved: the two halves are the pair vectors
    v0 = hn::BitCast(DU32x16(), a);
    v1 = hn::BitCast(DU32x16(), b);
  } else {
    v0 = hn::BitCast(DU32x16(), hn::InterleaveLower(d16, a, b));
    v1 = hn::BitCast(DU32x16(), hn::InterleaveUpper(d16, a, b));
  }
}

// y[t, r] for the rows of tile ti inside [r_begin, r_end), as StoreTileRows<Bf16Slot> (kPaired:
// <RowSlot>): a whole tile's 32 sums per token are two vectors in Bf16Slot order, put in row
// order by two two-source permutes (rows 0-15: 128-bit blocks v0.0, v1.0, v0.1, v1.1; rows 16-31:
// v0.2, v1.2, v0.3, v1.3) instead of 32 scalar moves (those were 12% of a 512-token GEMM's
// samples); kPaired's vectors are in row order already.
template <bool kPaired>
HWY_INLINE void StoreBf16TileRows(const float* HWY_RESTRICT accb, int64_t n_tok, int64_t ti,
                                  int64_t r_begin, int64_t r_end, int64_t n_rows,
                                  float* HWY_RESTRICT y) {
  const int64_t r0 = ti * kTileRows;
  constexpr auto kSlot = kPaired ? RowSlot : Bf16Slot;
  if (r0 < r_begin || r0 + kTileRows > std::min(r_end, n_rows)) {
    return StoreTileRows<kSlot>(accb, n_tok, ti, r_begin, r_end, n_rows, y);
  }
  const hn::ScalableTag<float> df;
  if constexpr (kPaired) {
    for (int64_t j = 0; j < n_tok; ++j) {
      float* out = y + j * n_rows + r0;
      hn::StoreU(hn::Load(df, accb + j * kTileRows), df, out);
      hn::StoreU(hn::Load(df, accb + j * kTileRows + 16), df, out + 16);
    }
    return;
  }
  const __m512i lo_idx = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i hi_idx =
      _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  for (int64_t j = 0; j < n_tok; ++j) {
    const auto v0 = hn::Load(df, accb + j * kTileRows);
    const auto v1 = hn::Load(df, accb + j * kTileRows + 16);
    float* out = y + j * n_rows + r0;
    hn::StoreU(hn::Vec512<float>{_mm512_permutex2var_ps(v0.raw, lo_idx, v1.raw)}, df, out);
    hn::StoreU(hn::Vec512<float>{_mm512_permutex2var_ps(v0.raw, hi_idx, v1.raw)}, df, out + 16);
  }
}

// bf16(v) as vcvtne2ps2bf16 rounds it: an f32 subnormal as zero of its sign, else round to nearest
// even (NaN aside: activations here are finite).
inline uint16_t RoundToBf16Scalar(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7F800000u) == 0) return static_cast<uint16_t>((u >> 16) & 0x8000u);
  return static_cast<uint16_t>((u + ((u >> 16) & 1u) + 0x7FFFu) >> 16);
}

// xs pairs of nc columns of one token row x (already offset to the block) times f: out[p] =
// bf16(fl(x[2p + 1] * f)) << 16 | bf16(fl(x[2p] * f)); an odd nc pairs the last column with +0.
// One vcvtne2ps2bf16 per 32 columns (it replaced a 3-op rounding per 16 and a ConcatOdd; the xs
// were ~15% of a 512-token GEMM's samples while the split still recomputed them per tile).
HWY_INLINE void Bf16PairsOfX(const float* HWY_RESTRICT x, int64_t nc, float f,
                             uint32_t* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  const auto vf = hn::Set(df, f);
  int64_t c = 0;
  for (; c + 32 <= nc; c += 32) {
    const auto pairs =
        Bf16PairsOf(hn::Mul(hn::LoadU(df, x + c), vf), hn::Mul(hn::LoadU(df, x + c + 16), vf));
    hn::StoreU(pairs, DU32x16(), out + c / 2);
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
// added into accb + t * accb_stride (token j's 32 sums at + j * kTileRows, in Bf16Slot order, or
// RowSlot for kPaired); prefetch_bytes: bytes ahead of the decoded column (StreamAhead), or
// kNoPrefetch (no hints; Bf16GemvPrefetchBytes).
template <int kG, int kNT, bool kFolded, bool kPaired, typename T>
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
      // A pair of columns is 64 (FP8) or 128 (BF16) bytes: unless kNoPrefetch, one prefetch per
      // 64-byte line, into the tile this stream decodes next past the tile's end (StreamAhead).
      constexpr auto kS = static_cast<int64_t>(sizeof(T));
      if (prefetch_bytes != kNoPrefetch) {
        for (int64_t b = 0; b < kS; ++b) {
          hwy::Prefetch(StreamAhead<kNT>(wt + t * tile_stride,
                                         (c0 + 2 * p) * kTileRows * kS + prefetch_bytes + 64 * b,
                                         tile_stride * kS));
        }
      }
      VPairs w0, w1;
      Bf16PairColumns<kFolded, kPaired>(wc, second, w0, w1);
      DotPairColumn<kG>(w0, w1, xp + t * kG, p, acc[t]);
    }
  };
  for (int64_t p = 0; p < n_full; ++p) step(p, true);
  if (nc % 2 != 0) step(n_full, false);
  for (int t = 0; t < kNT; ++t) StoreOrAdd<kG>(df, acc[t], first, accb + t * accb_stride);
}

// Tiles the bf16-dot GEMV runs side by side for a group of g tokens: 1 for 1-2 tokens and 7-8, 2
// for 3-6.
//
// 1-2 tokens (969bee7; 4 tiles before): one contiguous tile stream per thread, without software
// prefetch (Bf16GemvPrefetchBytes), with 2-4 accumulator chains. A decode reads these weights from
// DRAM, where the hardware prefetchers stream one run faster than 4 tile streams side by side
// (bench/micro/stream_hint_bench shows the pattern); in cache the chains' latency bounds it
// instead. Measured on a Zen 4 VM (bench-model --ab-variants, time per forward against 4 tiles
// without hints): batch 1 -3.2 to -8.2%; 2 tiles, and one tile with 2 KiB hints, were slower than
// one without. Not measured on Zen 5, where 4 tiles had been chosen (with hints then; for 2 tokens
// in 32d1559, faster there than 2 tiles).
//
// 3-6 tokens have 12-24 accumulator chains (2 vectors x g x tiles) where the f32 path's GemvTiles
// gives them one tile (6-12 chains: enough for FMA's 4 cycles, not for vdpbf16ps's ~6 at 2 per
// cycle on Zen 5): BM_Gemm_FP8_Expert_Bf16DotPairs/3 in cache 299-309 -> 394-397 GFLOP/s (b048b4b,
// Zen 5). More tiles for 1 token, 3 tiles for 2 tokens and groups of 6 on 2 tiles for 8 and 16
// tokens were slower. Each (row, token) chain does not depend on it. Figures:
// docs/measurements.md#bf16gemvrun.
constexpr int Bf16GemvRun(int g) { return g >= 3 && g <= 6 ? 2 : 1; }
inline constexpr int kMaxBf16GemvRun = 2;

template <typename T, bool kFolded, bool kPaired>
struct Bf16GemvFn {
  template <int kG>
  struct F {  // nt tiles: Bf16GemvRun(kG) (1 or 2) at a time, then one by one (ForTileBlocks)
    // A function of its own per group size: all of them inlined into Bf16TiledRows, GCC kept the
    // accumulators of 2 x 3 tokens and the 8-token loop's bounds on the stack (matmul_bench, 2
    // threads, 3 alternating rounds: BM_Gemm_FP8_Expert_Bf16DotPairs/3 ~225 against ~400
    // GFLOP/s). A call per column block and group costs little beside its 64 column pairs.
    static HWY_NOINLINE void run(int nt, const T* wt, int64_t tile_stride, int64_t c0, int64_t nc,
                                 const uint32_t* const* xp, bool first, int64_t prefetch_bytes,
                                 float* accb, int64_t accb_stride) {
      ForTileBlocks<Bf16GemvRun(kG)>(nt, [&](int t, auto width) HWY_ATTR {
        Bf16GemvBlock<kG, decltype(width)::value, kFolded, kPaired>(
            wt + t * tile_stride, tile_stride, c0, nc, xp + t * kG, first, prefetch_bytes,
            accb + t * accb_stride, accb_stride);
      });
    }
  };
};

// Token counts from which the GEMM path (a decoded panel per block) takes over from decoding in
// registers per token group: FP8 as the f32 path; BF16's pair decode (two loads and two
// interleaves per 64 weights) is cheap enough to redo per group up to 16 tokens
// (BM_LmHead_BF16_Bf16Dot/16 242-336 GFLOP/s in registers against 192-275 through the panel,
// 77ab844 on a Zen 5 VM; FP8 in registers at 16 tokens was slower). Measured on kTiled;
// kTiledPairs decodes cheaper in registers still, and FP8's crossover held there. With groups of 8
// (kBf16GemvGroup) FP8 at 5-8 tokens ran faster in registers than through the panel in cache but
// not cold, which is how a decode step reads it: FP8 keeps the panel from 5. BF16's 17 was not
// re-measured with groups of 8 or on kTiledPairs. Figures: docs/measurements.md#kbf16gemmmintokens.
template <typename T>
inline constexpr int64_t kBf16GemmMinTokens =
    std::is_same_v<T, uint16_t> ? 17 : kTiledGemmMinTokens<T>;

// Tokens per group of the bf16-dot GEMV: up to 8, so a group has 2 x 8 = 16 accumulator chains
// (vdpbf16ps: ~6 cycles latency at 2 per cycle on Zen 5, 12 chains to keep both pipes busy), and
// 9-16 tokens in two groups, the first one larger for odd counts (16: 8 + 8 instead of the f32
// path's 6 + 6 + 4, whose last group has 8 chains; 9: 5 + 4). A (row, token) chain does not
// depend on the grouping. BM_LmHead_BF16_Bf16DotPairs/16 (lm_head from DRAM) median +10% against
// groups of 6 (a21a4a8, Zen 5 VM; docs/measurements.md#kbf16gemvgroup). Bf16NextGroup(n) for
// 1 <= n < kBf16GemmMinTokens<T> (n > 16 never reaches the GEMV).
inline constexpr int kBf16GemvGroup = 8;
inline constexpr int Bf16NextGroup(int64_t n) {
  return static_cast<int>(
      n <= kBf16GemvGroup ? n : (n <= 2 * kBf16GemvGroup ? (n + 1) / 2 : kBf16GemvGroup));
}
// Tiles per GEMV run (TiledRowsWith): those of the first (largest) token group; a later group
// takes the run's tiles in blocks of its own Bf16GemvRun, or fewer (ForTileBlocks: any run
// width works for any group).
inline constexpr int Bf16GemvRunOf(int64_t n_tok) { return Bf16GemvRun(Bf16NextGroup(n_tok)); }
// The run's buffers (Bf16GemvTiles) hold kMaxBf16GemvRun tiles: every group size's run fits.
constexpr bool Bf16GemvRunsFit() {
  for (int g = 1; g <= kBf16GemvGroup; ++g) {
    if (Bf16GemvRun(g) < 1 || Bf16GemvRun(g) > kMaxBf16GemvRun) return false;
  }
  return true;
}
static_assert(Bf16GemvRunsFit());

// The software prefetch distance of a bf16-dot GEMV of n_tok tokens (Bf16GemvBlock's
// prefetch_bytes; StreamAhead), from its first token group (Bf16NextGroup): kNoPrefetch for 1-2
// tokens (one tile per run, one stream: the hardware prefetchers alone; Bf16GemvRun),
// kPrefetchBytes for groups of 3-6 (3-6 and 9-12 tokens, 2 tiles per run) and 7-8 (7-8 and 13-16
// tokens, one tile per run: without the hints lm_head at 16 tokens ran ~20% slower, measured at
// a18475b on a Zen 4 VM).
constexpr int64_t Bf16GemvPrefetchBytes(int64_t n_tok) {
  return Bf16NextGroup(n_tok) <= 2 ? kNoPrefetch : kPrefetchBytes;
}

// GEMV: rows [r_begin, r_end) of the nt (<= kMaxBf16GemvRun) tiles from ti for n_tok
// (< kBf16GemmMinTokens<T>) tokens (FP8: their |x| ranges for the fold, as the f32 path).
// xs_rows (BF16 only; null: converted here per column block and group): every token's xs pairs
// converted once by the caller, token j's pair q at xs_rows[j * xs_stride_pairs + q] (Bf16PairsOfX
// of the whole row with factor 1, which is BF16's x factor: the same words the per-block conversion
// gives, as blocks start at even columns).
template <bool kPaired, typename T>
HWY_INLINE void Bf16GemvTiles(const TiledView<T>& m, int64_t ti, int nt,
                              const float* HWY_RESTRICT x, int64_t n_tok, const AbsRange* ranges,
                              const uint32_t* HWY_RESTRICT xs_rows, int64_t xs_stride_pairs,
                              float* HWY_RESTRICT y, int64_t r_begin, int64_t r_end) {
  constexpr int64_t kMaxTok = kBf16GemmMinTokens<T>;
  constexpr int kMaxGroup = static_cast<int>(std::min<int64_t>(kBf16GemvGroup, kMaxTok - 1));
  constexpr int64_t kAccStride = kMaxTok * kTileRows;
  constexpr int64_t kPairs = kTiledCols / 2;
  HWY_ALIGN float accb[kMaxBf16GemvRun * kAccStride];
  HWY_ALIGN uint32_t xsp[kMaxBf16GemvRun * kMaxTok * kPairs];  // [tile][token][pair]
  DSS_DCHECK(nt >= 1 && nt <= kMaxBf16GemvRun && n_tok < kMaxTok, "GEMV run of ", nt, " tiles, ",
             n_tok, " tokens");
  const T* wt = m.tile(ti);
  const int64_t tile_stride = kTileRows * m.n_cols;
  for (int64_t c0 = 0; c0 < m.n_cols; c0 += kTiledCols) {
    const int64_t nc = std::min(kTiledCols, m.n_cols - c0);
    float f[kMaxBf16GemvRun] = {};
    for (int t = 0; t < nt; ++t) f[t] = m.x_factor(ti + t, c0);
    int64_t prefetch_bytes = Bf16GemvPrefetchBytes(n_tok);
    for (int64_t j0 = 0, g = 0; j0 < n_tok; j0 += g) {
      g = Bf16NextGroup(n_tok - j0);
      bool folded = false;
      if constexpr (std::is_same_v<T, uint8_t>) {
        folded = true;
        for (int t = 0; t < nt; ++t) folded = folded && Fp8FoldsExactly(f[t], ranges + j0, g);
      }
      const uint32_t* xp[kMaxBf16GemvRun * kMaxTok];
      for (int t = 0; xs_rows != nullptr && t < nt; ++t) {
        for (int64_t j = 0; j < g; ++j)
          xp[t * g + j] = xs_rows + (j0 + j) * xs_stride_pairs + c0 / 2;
      }
      for (int t = 0; xs_rows == nullptr && t < nt; ++t) {
        const float ft = folded ? f[t] * kTiledFp8Fold : f[t];
        for (int64_t j = 0; j < g; ++j) {
          uint32_t* out = xsp + (t * kMaxTok + j) * kPairs;
          if (t > 0 && f[t] == f[t - 1]) {  // tiles in one 128-row scale block share xs
            xp[t * g + j] = xp[(t - 1) * g + j];
          } else {
            Bf16PairsOfX(x + (j0 + j) * m.n_cols + c0, nc, ft, out);
            xp[t * g + j] = out;
          }
        }
      }
      const auto* xpc = static_cast<const uint32_t* const*>(xp);
      float* acc = accb + j0 * kTileRows;
      if (folded) {
        WithGroup<Bf16GemvFn<T, true, kPaired>::template F, 1, kMaxGroup>(
            static_cast<int>(g), nt, wt, tile_stride, c0, nc, xpc, c0 == 0, prefetch_bytes, acc,
            kAccStride);
      } else {
        WithGroup<Bf16GemvFn<T, false, kPaired>::template F, 1, kMaxGroup>(
            static_cast<int>(g), nt, wt, tile_stride, c0, nc, xpc, c0 == 0, prefetch_bytes, acc,
            kAccStride);
      }
      if (prefetch_bytes != kNoPrefetch)
        prefetch_bytes += kTiledCols * kTileRows * static_cast<int64_t>(sizeof(T));
    }
  }
  for (int t = 0; t < nt; ++t) {
    StoreBf16TileRows<kPaired>(accb + t * kAccStride, n_tok, ti + t, r_begin, r_end, m.n_rows, y);
  }
}

// The block sums of kNT tiles' decoded pair panel wp ([n_pairs][kNT tiles][2 vectors]) x xs
// pairs of kG tokens (xsp[j * kTiledCols / 2 + p]), tile t's stored to / added into accb + t *
// accb_stride; column pair p's step prefetches pf[0..kNT) + p * prefetch_stride (pf[0] null:
// none). Two tiles (64 rows) hold 4 x kG accumulators: 4 weight loads and kG broadcasts per
// 4 * kG vdpbf16ps, against 2 + kG per 2 * kG for one tile. Each (row, token) chain is the same
// for any kNT.
template <int kG, int kNT>
HWY_INLINE void Bf16GemmMicro(const uint32_t* HWY_RESTRICT wp, int64_t n_pairs,
                              const uint32_t* HWY_RESTRICT xsp, bool first,
                              float* HWY_RESTRICT accb, int64_t accb_stride,
                              const uint8_t* const* pf, int64_t prefetch_stride) {
  const hn::ScalableTag<float> df;
  const DU32x16 du;
  hn::Vec<decltype(df)> acc[kNT][kTiledVecs][kG];
  for (int t = 0; t < kNT; ++t) ZeroAcc<kG>(df, acc[t]);
  const uint32_t* xp[kG];
  for (int j = 0; j < kG; ++j) xp[j] = xsp + j * (kTiledCols / 2);
  constexpr int64_t kPairWords = kNT * 32;
  for (int64_t p = 0; p < n_pairs; ++p) {
    if (pf[0] != nullptr) {  // a pair's bytes per tile: one prefetch per 64-byte line
      for (int t = 0; t < kNT; ++t) {
        for (int64_t b = 0; b < prefetch_stride; b += 64)
          hwy::Prefetch(pf[t] + p * prefetch_stride + b);
      }
    }
    const uint32_t* HWY_RESTRICT w = wp + p * kPairWords;
    hn::Vec<DU32x16> wv[kNT][kTiledVecs];
    for (int t = 0; t < kNT; ++t) {
      wv[t][0] = hn::Load(du, w + t * 32);
      wv[t][1] = hn::Load(du, w + t * 32 + 16);
    }
    for (int j = 0; j < kG; ++j) {
      const auto xv = hn::Set(du, xp[j][p]);
      for (int t = 0; t < kNT; ++t) {
        acc[t][0][j] = DotBf16Pairs(acc[t][0][j], wv[t][0], xv);
        acc[t][1][j] = DotBf16Pairs(acc[t][1][j], wv[t][1], xv);
      }
    }
  }
  for (int t = 0; t < kNT; ++t) StoreOrAdd<kG>(df, acc[t], first, accb + t * accb_stride);
}
template <int kNT>
struct Bf16GemmMicroFn {
  template <int kG>
  struct F {
    static void run(const uint32_t* wp, int64_t n_pairs, const uint32_t* xsp, bool first,
                    float* accb, int64_t accb_stride, const uint8_t* const* pf,
                    int64_t prefetch_stride) {
      Bf16GemmMicro<kG, kNT>(wp, n_pairs, xsp, first, accb, accb_stride, pf, prefetch_stride);
    }
  };
};

// GEMM: rows [r_begin, r_end) of the nt (<= kTilesPerScaleBlock) tiles from ti, which share one
// 128-row scale block, for n_tok tokens: per block of kTiledTokBlock tokens and kTiledCols columns
// the tokens' xs pairs are computed once for all nt tiles (12 KiB), then per two tiles (a last odd
// one alone) their pair vectors are decoded once (16 KiB) and multiplied by micro-kernels of up to
// kTiledGroup tokens while the next tiles' (or the next block's) weights are prefetched.
inline constexpr int kTilesPerScaleBlock = static_cast<int>(kFp8BlockSize / kTileRows);
template <bool kPaired, typename T>
HWY_INLINE void Bf16GemmTiles(const TiledView<T>& m, int64_t ti, int nt,
                              const float* HWY_RESTRICT x, int64_t n_tok, float* HWY_RESTRICT y,
                              int64_t r_begin, int64_t r_end) {
  constexpr int64_t kPairs = kTiledCols / 2;
  constexpr int64_t kAccStride = kTiledTokBlock * kTileRows;
  HWY_ALIGN uint32_t wp[kPairs * 2 * kTileRows];
  HWY_ALIGN uint32_t xsp[kTiledTokBlock * kPairs];
  HWY_ALIGN float accb[kTilesPerScaleBlock * kAccStride];
  const DU32x16 du;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kTiledTokBlock) {
    const int64_t n_t = std::min(kTiledTokBlock, n_tok - t0);
    for (int64_t c0 = 0; c0 < m.n_cols; c0 += kTiledCols) {
      const int64_t nc = std::min(kTiledCols, m.n_cols - c0);
      const int64_t n_pairs = (nc + 1) / 2;
      const float f = m.x_factor(ti, c0);
      for (int64_t j = 0; j < n_t; ++j) {
        Bf16PairsOfX(x + (t0 + j) * m.n_cols + c0, nc, f, xsp + j * kPairs);
      }
      for (int t = 0; t < nt;) {
        const int k = t + 1 < nt ? 2 : 1;  // tiles in this panel
        for (int u = 0; u < k; ++u) {
          const T* wt = m.tile(ti + t + u);
          for (int64_t p = 0; p < n_pairs; ++p) {
            VPairs w0, w1;
            Bf16PairColumns<false, kPaired>(wt + (c0 + 2 * p) * kTileRows, 2 * p + 1 < nc, w0, w1);
            hn::Store(w0, du, wp + p * k * 32 + u * 32);
            hn::Store(w1, du, wp + p * k * 32 + u * 32 + 16);
          }
        }
        // The next panel's tiles at this column block, else the first tiles' next block.
        const int t_next = t + k < nt ? t + k : 0;
        const int64_t c_next = t + k < nt ? c0 : c0 + kTiledCols;
        const uint8_t* pf[2];
        for (int u = 0; u < 2; ++u) {
          pf[u] = reinterpret_cast<const uint8_t*>(m.tile(ti + std::min(t_next + u, nt - 1)) +
                                                   c_next * kTileRows);
        }
        const auto* pfc = static_cast<const uint8_t* const*>(pf);
        const uint8_t* const no_pf[2] = {nullptr, nullptr};
        for (int64_t j0 = 0, g = 0; j0 < n_t; j0 += g) {
          g = NextGroup(n_t - j0);
          const uint8_t* const* pfj = j0 == 0 ? pfc : static_cast<const uint8_t* const*>(no_pf);
          float* acc = accb + t * kAccStride + j0 * kTileRows;
          const auto* xg = static_cast<const uint32_t*>(xsp + j0 * kPairs);
          const auto* wpc = static_cast<const uint32_t*>(wp);
          const int64_t pf_stride = 2 * kTileRows * static_cast<int64_t>(sizeof(T));
          if (k == 2) {
            WithGroup<Bf16GemmMicroFn<2>::template F>(static_cast<int>(g), wpc, n_pairs, xg,
                                                      c0 == 0, acc, kAccStride, pfj, pf_stride);
          } else {
            WithGroup<Bf16GemmMicroFn<1>::template F>(static_cast<int>(g), wpc, n_pairs, xg,
                                                      c0 == 0, acc, kAccStride, pfj, pf_stride);
          }
        }
        t += k;
      }
    }
    for (int t = 0; t < nt; ++t) {
      StoreBf16TileRows<kPaired>(accb + t * kAccStride, n_t, ti + t, r_begin, r_end, m.n_rows,
                                 y + t0 * m.n_rows);
    }
  }
}

// Rows [r_begin, r_end) of a kBf16Dot matrix in layout kTiled, or kTiledPairs (kPaired; n_cols
// even), as TiledRows.
// BF16 through the GEMV converts x to bf16 pairs once per call where every token's row fits
// kBf16CallXsPairs (64 KiB of stack: ds-mini's lm_head at 16 tokens, a 7168-column V3 one up to
// 4), instead of per GEMV run, column block and token group (that conversion was ~15% of lm_head's
// perf samples at 16 tokens; FP8's factor differs per scale block, so FP8 keeps converting per
// block).
inline constexpr int64_t kBf16CallXsPairs = 16384;
template <bool kPaired, typename T>
void Bf16TiledRows(const TiledView<T>& m, const float* HWY_RESTRICT x, int64_t n_tok,
                   float* HWY_RESTRICT y, int64_t r_begin, int64_t r_end) {
  const uint32_t* xs_rows = nullptr;
  const int64_t xs_stride_pairs = (m.n_cols + 1) / 2;
  [[maybe_unused]] HWY_ALIGN uint32_t xs_call[std::is_same_v<T, uint16_t> ? kBf16CallXsPairs : 1];
  if constexpr (std::is_same_v<T, uint16_t>) {
    // More than one GEMV run (TiledRowsWith's runs of Bf16GemvRunOf(n_tok) tiles): one run's own
    // conversion, shared by its tiles, costs no more.
    const int64_t n_tiles = (r_end + kTileRows - 1) / kTileRows - r_begin / kTileRows;
    if (n_tok < kBf16GemmMinTokens<T> && n_tok * xs_stride_pairs <= kBf16CallXsPairs &&
        n_tiles > Bf16GemvRunOf(n_tok)) {
      for (int64_t j = 0; j < n_tok; ++j)
        Bf16PairsOfX(x + j * m.n_cols, m.n_cols, 1.0f, xs_call + j * xs_stride_pairs);
      xs_rows = xs_call;
    }
  }
  TiledRowsWith<kBf16GemmMinTokens<T>, kTilesPerScaleBlock>(
      m, x, n_tok, r_begin, r_end, Bf16GemvRunOf(n_tok),
      [&](int64_t ti, int nt, const AbsRange* ranges) HWY_ATTR {
        Bf16GemvTiles<kPaired>(m, ti, nt, x, n_tok, ranges, xs_rows, xs_stride_pairs, y, r_begin,
                               r_end);
      },
      [&](int64_t ti, int nt)
          HWY_ATTR { Bf16GemmTiles<kPaired>(m, ti, nt, x, n_tok, y, r_begin, r_end); });
}
#endif  // HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_KERNELS_CPU_MATMUL_BF16_INL_H_
