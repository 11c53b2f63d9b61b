// Per-target body of kernels/cpu/matmul.h. Included once per Highway target (foreach_target):
// the row-major path and the weight loads the tiled f32 path shares (matmul_rowmajor-inl.h), the
// tiled f32 path (here), the tiled bf16-dot path (matmul_bf16-inl.h) and the dispatch over them
// (MatmulRows).
#if defined(DSS_KERNELS_CPU_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DSS_KERNELS_CPU_MATMUL_INL_H_
#undef DSS_KERNELS_CPU_MATMUL_INL_H_
#else
#define DSS_KERNELS_CPU_MATMUL_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "base/check.h"

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/cpu/hwy_util-inl.h"
#include "kernels/cpu/matmul_rowmajor-inl.h"  // LoadWeights, RowsView, MatmulRowsT, kGemmMinTokens
#include "tensor/matrix.h"

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Tiled layout (tensor/matrix.h WeightLayout::kTiled: tiles of kTileRows = 32 rows, each stored
// column-major [n_cols][32]). Rows live in vector lanes, so no dot product is split over lanes.
// The canonical arithmetic, per (row r, token t), of every path, group shape and thread split:
//   per block b of kTiledCols columns: s_b = 0; for c in the block, in order:
//     s_b = fma(wd(r, c), xs(t, c), s_b);
//   y[t, r] = (((s_0) + s_1) + s_2) ... (block sums added in order: a chain of 128 FMAs plus one
//   of n_cols / 128 adds, like DeepSeek's fp8_gemm per-block partial sums; a single chain over
//   all columns measured 2.4e-5 relative error against the double reference on 1040 columns)
// with wd(r, c) the stored FP8 value times 2^-8 (exact, TiledColumn) or the BF16 / I8 value,
// and xs(t, c) = fl(x[t, c] * fl(scale(r / 128, c / 128) * 2^8)) for FP8 (a tile's 32 rows share
// one 128-row scale block, so xs is per (tile, token)), x[t, c] otherwise (I8's row scale
// multiplies the finished sum, in MatmulRows). The block scale thus rounds into x once per
// (token, column) instead of into every weight.
//   GEMV (< kTiledGemmMinTokens<T> tokens): the tile's weights decoded in registers, column by
//     column, for groups of up to kTiledGroup tokens (kTiledGroup * kTileRows / Lanes <= 12
//     accumulators; NextGroup), per column block so later groups re-read the block from L1; the
//     tile stream is prefetched kPrefetchBytes ahead (by group p's pass: p blocks further; past
//     the tile's end, into the tile the stream decodes next: StreamAhead) except in a GEMV whose
//     runs are 4 tiles wide (GemvPrefetchBytes); up to 4 tiles run side by side for enough FMA
//     chains (GemvTiles). (The bf16-dot path, matmul_bf16-inl.h: Bf16GemvRun,
//     Bf16GemvPrefetchBytes.) FP8 folds the decode's 2^112 into xs where that is exact
//     (Fp8FoldsExactly; same products).
// Lanes need not hold consecutive rows: FP8 decodes whole columns in TileSlot order and the
// tile's sums are put back in row order when stored (StoreTileRows).
//   GEMM: per block of kTiledTokBlock tokens and kTiledCols columns, the tile's weights decoded
//     once to f32 [128][32] (16 KiB, L1; the next block prefetched meanwhile) and xs scaled once
//     to [tokens][128] (24 KiB, read a group at a time), then outer-product micro-kernels (per
//     column: Lanes-row weight vectors x broadcast xs of the group's tokens; 4 loads + 3 broadcasts
//     per 12 FMAs on AVX2).
inline constexpr int64_t kTiledCols = 128;       // column block = the FP8 scale block
inline constexpr int64_t kTiledTokBlock = 48;    // tokens per GEMM block (a multiple of 1..6)
inline constexpr int64_t kPrefetchBytes = 2048;  // ~ DRAM latency x per-core read bandwidth
inline constexpr int64_t kNoPrefetch = -1;       // a GEMV's prefetch_bytes: no software prefetch

// The software prefetch distance (bytes ahead of the decoded column, StreamAhead) of an f32-path
// GEMV whose runs are `run` tiles wide (GemvTiles of its first token group), for the whole GEMV:
// kNoPrefetch for runs of 4 (1 token), including a run's 2- and 1-tile tail blocks and matrices
// of fewer than 4 tiles; kPrefetchBytes for runs of 1-2. (The bf16-dot path's rule is
// Bf16GemvPrefetchBytes: its 1-2 tokens run one tile, also without hints.) With the hints, a cold
// 4-tile run's reads and arithmetic added up instead of overlapping: the hardware prefetchers
// stream its 4 tile streams (4-32 KiB apart) faster alone (bench/micro/stream_hint_bench shows the
// pattern). Measured at a18475b on a Zen 4 VM only, not yet on Zen 5 (where the earlier GEMV
// tuning was done): batch 1 -13 to -21% per forward (bench-model --ab-variants 2). Runs of 1-2
// tiles keep the hints, which were faster there. Figures: docs/measurements.md#gemvprefetchbytes.
constexpr int64_t GemvPrefetchBytes(int run) { return run >= 4 ? kNoPrefetch : kPrefetchBytes; }

template <typename TW>
struct TiledView {
  using T = TW;
  const T* HWY_RESTRICT w;           // tiles [ceil(n_rows / 32)][n_cols][32] (kTiledPairs:
                                     // [n_cols / 2][32][2]; the bf16-dot path only)
  const float* HWY_RESTRICT scales;  // FP8: [ceil(n_rows/128), ceil(n_cols/128)]; else null
  int64_t n_cols, n_rows;
  const T* tile(int64_t t) const { return w + t * kTileRows * n_cols; }
  // xs's factor for tile t and the column block holding column c: fl(scale * 2^8), or 1.
  float x_factor(int64_t t, int64_t c) const {
    if (scales == nullptr) return 1.0f;
    const int64_t n_sc = (n_cols + kFp8BlockSize - 1) / kFp8BlockSize;
    return scales[(t * kTileRows / kFp8BlockSize) * n_sc + c / kFp8BlockSize] * 256.0f;
  }
};

// Lanes of a full-width f32 vector (fixed on every x86 target) and vectors per tile column.
inline constexpr int64_t kTiledLanes = static_cast<int64_t>(hn::MaxLanes(hn::ScalableTag<float>()));
inline constexpr int kTiledVecs = static_cast<int>(kTileRows / kTiledLanes);
inline constexpr int kTiledGroup = kTiledVecs >= 12 ? 1 : 12 / kTiledVecs;  // tokens per group

// FP8 tile columns are decoded a whole column (kTileRows codes) at a time where a vector of
// 4 * Lanes bytes fits in a column (SSE4, AVX2): each such load is split into its four bytes per
// 32-bit lane by 16- and 32-bit shifts and a mask, as DecodeE4m3Shifted places them (the value
// times 2^-120, exact), with no shuffle and one load per four vectors (single thread, 256 x 1024
// FP8 in L2, best of 300, AVX2 code on Zen 5: 9.5 us vs 11.3 us for a sign-extending load per
// vector). The price is the lane order: vector v = 4q + k holds, in lane i, row q * 4 * Lanes +
// 4i + k (byte k of 32-bit lane i of load q); TileSlot maps rows to those accumulator slots.
// Wider vectors (AVX3: 64 bytes would span two columns) and HWY_SCALAR decode one vector per load
// in row order.
inline constexpr bool kFp8ByteLanes = kTiledLanes >= 4 && 4 * kTiledLanes <= kTileRows;

// Accumulator slot (v * Lanes + i) of row r of a tile, per the lane order of the weight type.
template <typename T>
constexpr int64_t TileSlot(int64_t r) {
  if constexpr (!std::is_same_v<T, uint8_t> || !kFp8ByteLanes) {
    return r;
  } else {
    constexpr int64_t kLoad = 4 * kTiledLanes;  // rows per load
    const int64_t q = r / kLoad, i = (r % kLoad) / 4, k = r % 4;
    return (4 * q + k) * kTiledLanes + i;
  }
}

// Tile column at p (kTileRows codes) as kTiledVecs vectors in TileSlot order, each value times
// 2^-120 (DecodeE4m3Shifted's scaling).
template <class DF>
HWY_INLINE void DecodeFp8Column(DF df, const uint8_t* HWY_RESTRICT p,
                                hn::Vec<DF> (&w)[kTiledVecs]) {
  if constexpr (kFp8ByteLanes) {
    const hn::RebindToSigned<DF> di;
    const hn::Repartition<int16_t, decltype(di)> d16;
    const auto mask = hn::Set(di, static_cast<int32_t>(0x87F00000u));
    for (int q = 0; q < kTiledVecs / 4; ++q) {
      const auto raw = hn::BitCast(
          d16, hn::LoadU(di, reinterpret_cast<const int32_t*>(p + q * 4 * kTiledLanes)));
      // Arithmetic shifts of the 16-bit halves put bytes 3 and 1 (hi), 2 and 0 (lo) sign-extended
      // at bits 11..4 of their half; the upper half then sits where DecodeE4m3Shifted puts a code
      // (bits 27..20 of the 32-bit lane), the lower half gets there by a 32-bit shift.
      const auto hi = hn::BitCast(di, hn::ShiftRight<4>(raw));
      const auto lo = hn::BitCast(di, hn::ShiftRight<4>(hn::ShiftLeft<8>(raw)));
      w[4 * q + 0] = hn::BitCast(df, hn::And(hn::ShiftLeft<16>(lo), mask));
      w[4 * q + 1] = hn::BitCast(df, hn::And(hn::ShiftLeft<16>(hi), mask));
      w[4 * q + 2] = hn::BitCast(df, hn::And(lo, mask));
      w[4 * q + 3] = hn::BitCast(df, hn::And(hi, mask));
    }
  } else {
    for (int v = 0; v < kTiledVecs; ++v) w[v] = DecodeE4m3Shifted(df, p + v * kTiledLanes);
  }
}

// A tile column as wd above (FP8: value times 2^-8, DecodeFp8Column times 2^112, exact; e4m3
// subnormals take the slower denormal multiply), vectors in TileSlot<T> order.
// The factor between DecodeFp8Column's scaling (2^-120) and the tiled wd (2^-8): TiledColumn
// multiplies the weights by it, the folded GEMV multiplies x's factor instead.
inline constexpr float kTiledFp8Fold = 0x1p112f;
template <class DF>
HWY_INLINE void TiledColumn(DF df, const uint8_t* HWY_RESTRICT p, hn::Vec<DF> (&w)[kTiledVecs]) {
  DecodeFp8Column(df, p, w);
  for (int v = 0; v < kTiledVecs; ++v) w[v] = hn::Mul(w[v], hn::Set(df, kTiledFp8Fold));
}
template <class DF, typename T>
HWY_INLINE void TiledColumn(DF df, const T* HWY_RESTRICT p, hn::Vec<DF> (&w)[kTiledVecs]) {
  for (int v = 0; v < kTiledVecs; ++v) w[v] = LoadWeights(df, p + v * kTiledLanes, hn::Zero(df));
}

// Tokens in the next group when n remain: kTiledGroup, one fewer where that would leave a lone
// last token (a group of one has a single FMA chain per weight vector, so it runs at the FMA
// latency rather than throughput: 16 tokens on AVX2 go 3+3+3+3+2+2, not 3+3+3+3+3+1). The
// grouping never changes a result: every (row, token) chain is the same in any group.
inline constexpr int NextGroup(int64_t n) {
  const int64_t g = n < kTiledGroup ? n : kTiledGroup;
  return static_cast<int>(g > 2 && n - g == 1 ? g - 1 : g);
}
static_assert(kTiledGroup < 3 || NextGroup(kTiledGroup + 1) == kTiledGroup - 1);

// Tiled: token counts from which the GEMM path (weights decoded once per block into an L1 panel)
// beats decoding them in registers once per token group. FP8's decode costs more than the FMAs of
// a 1-2 token group, so where a group holds <= 3 tokens (AVX2: 16 registers; a group of 3 spills
// one accumulator) 3 and 4 FP8 tokens go to the GEMM: measured on Zen 3 (0603074; one thread, 256
// x 1024 FP8 in L2, best of 300; with the earlier F16C decode) 4 tokens 63-69 us in registers vs
// 48-51 us through the panel (docs/measurements.md#ktiledgemmmintokens). BF16 / I8 decode in 2
// operations per vector and stay in registers to 4 tokens.
template <typename T>
inline constexpr int64_t kTiledGemmMinTokens = (std::is_same_v<T, uint8_t> && kTiledGroup < 5)
                                                   ? 3
                                                   : kGemmMinTokens;

// The block sums acc[v][j] (token j's rows v * N ..) stored to accb (first block) or added.
template <int kG, class DF>
HWY_INLINE void StoreOrAdd(DF df, const hn::Vec<DF> (&acc)[kTiledVecs][kG], bool first,
                           float* HWY_RESTRICT accb) {
  constexpr int64_t N = kTiledLanes;
  for (int v = 0; v < kTiledVecs; ++v) {
    for (int j = 0; j < kG; ++j) {
      float* p = accb + (j * kTiledVecs + v) * N;
      hn::Store(first ? acc[v][j] : hn::Add(hn::Load(df, p), acc[v][j]), df, p);
    }
  }
}

// The canonical step shared by the GEMV and GEMM kernels (so both compute the same chains):
// acc[v][j] = fma(w, xv[j], acc[v][j]) for the tile column's weight vector v and every token j.
template <int kG, class V>
HWY_INLINE void FmaColumnVec(V w, int v, const V (&xv)[kG], V (&acc)[kTiledVecs][kG]) {
  for (int j = 0; j < kG; ++j) acc[v][j] = hn::MulAdd(w, xv[j], acc[v][j]);
}
template <int kG, class DF>
HWY_INLINE void ZeroAcc(DF df, hn::Vec<DF> (&acc)[kTiledVecs][kG]) {
  for (int v = 0; v < kTiledVecs; ++v) {
    for (int j = 0; j < kG; ++j) acc[v][j] = hn::Zero(df);
  }
}

// What a GEMV stream prefetches: byte off_bytes (kPrefetchBytes or more past the column it
// decodes) of the tile at `tile`, one of kNT tiles of tile_bytes each that run side by side. Past
// the tile's end it points as far into the tile this stream decodes next, kNT tiles on (exact for
// runs of kNT tiles and the first token group's pass; later groups' and shorter runs' hints may
// land on tiles already read), instead of into the
// next tile, which another stream of the run is reading already: a run's first columns then
// arrive while the previous run finishes (cold-cache small products, bench/micro/
// cold_stream_bench: 8 heads of W_UK^T per thread, 2 KiB tiles, 10.6 -> 13.8 GB/s, measured
// when 1-token runs still took hints; GemvPrefetchBytes). A hint only: past the end of the matrix
// it is never dereferenced.
template <int kNT>
HWY_INLINE const uint8_t* StreamAhead(const void* tile, int64_t off_bytes, int64_t tile_bytes) {
  const int64_t skip_bytes = off_bytes >= tile_bytes ? (kNT - 1) * tile_bytes : 0;
  return reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(tile) +
                                          static_cast<uintptr_t>(off_bytes + skip_bytes));
}

// Tiles the GEMV runs side by side for a group of g tokens, so that the group has at least ~6
// independent accumulator chains (kNT * kTiledVecs * g) to cover the FMA latency: one token on
// AVX3 (32 rows = 2 vectors) has only 2 chains per tile.
constexpr int GemvTiles(int g) { return kTiledVecs * g >= 6 ? 1 : (kTiledVecs * g >= 4 ? 2 : 4); }
inline constexpr int kMaxGemvTiles = GemvTiles(1);

// The block sums of kNT tiles' columns [c0, c1) (tile t's weights at wt + t * tile_stride) x the
// kG tokens' x rows (xr[j][c], scaled by f[t] for tile t here), stored to / added into accb +
// t * accb_stride; prefetch_bytes: bytes ahead of the decoded column (StreamAhead), or kNoPrefetch
// (no hints). Each (row, token) chain is the same for any kNT. kFolded (FP8 only): the weights are
// used as DecodeFp8Column leaves them (times 2^-120, not 2^-8) and the caller's f carries the 2^112
// instead, one multiply per weight vector fewer. Where Fp8FoldsExactly holds, fl(x * f * 2^112) =
// fl(x * f) * 2^112, so every product, hence every chain, is bit for bit the unfolded one.
template <int kG, int kNT, bool kFolded, bool kSameF, typename T>
HWY_INLINE void TiledGemvBlock(const T* HWY_RESTRICT wt, int64_t tile_stride, int64_t c0,
                               int64_t c1, const float* const* xr, const float* f, bool first,
                               int64_t prefetch_bytes, float* HWY_RESTRICT accb,
                               int64_t accb_stride) {
  static_assert(!kFolded || std::is_same_v<T, uint8_t>, "only FP8 folds its decode scale");
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  constexpr int64_t N = kTiledLanes;
  V acc[kNT][kTiledVecs][kG];
  for (int t = 0; t < kNT; ++t) ZeroAcc<kG>(df, acc[t]);
  for (int64_t c = c0; c < c1; ++c) {
    V xv[kG];
    for (int t = 0; t < kNT; ++t) {
      const T* HWY_RESTRICT wc = wt + t * tile_stride + c * kTileRows;
      constexpr auto kS = static_cast<int64_t>(sizeof(T));
      if (prefetch_bytes != kNoPrefetch) {
        hwy::Prefetch(StreamAhead<kNT>(wt + t * tile_stride, c * kTileRows * kS + prefetch_bytes,
                                       tile_stride * kS));
      }
      if (t == 0 || !kSameF) {
        for (int j = 0; j < kG; ++j) xv[j] = hn::Set(df, xr[j][c] * f[t]);
      }
      if constexpr (std::is_same_v<T, uint8_t>) {
        V w[kTiledVecs];
        if constexpr (kFolded) {
          DecodeFp8Column(df, wc, w);
        } else {
          TiledColumn(df, wc, w);
        }
        for (int v = 0; v < kTiledVecs; ++v) FmaColumnVec<kG>(w[v], v, xv, acc[t]);
      } else {  // one vector at a time: a group of 3 already fills the 16 AVX2 registers
        for (int v = 0; v < kTiledVecs; ++v) {
          FmaColumnVec<kG>(LoadWeights(df, wc + v * N, hn::Zero(df)), v, xv, acc[t]);
        }
      }
    }
  }
  for (int t = 0; t < kNT; ++t) StoreOrAdd<kG>(df, acc[t], first, accb + t * accb_stride);
}

// Per-token range of |x| for the FP8 fold: the largest and the smallest nonzero (+inf if none).
struct AbsRange {
  float max_abs, min_nonzero_abs;
};
HWY_INLINE AbsRange AbsRangeOf(const float* HWY_RESTRICT x, int64_t n) {
  const hn::ScalableTag<float> df;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  const auto inf = hn::Set(df, std::numeric_limits<float>::infinity());
  auto vmax = hn::Zero(df), vmin = inf;
  int64_t c = 0;
  for (; c + N <= n; c += N) {
    const auto a = hn::Abs(hn::LoadU(df, x + c));
    vmax = hn::Max(vmax, a);
    vmin = hn::Min(vmin, hn::IfThenElse(hn::Eq(a, hn::Zero(df)), inf, a));
  }
  AbsRange r{hn::GetLane(hn::MaxOfLanes(df, vmax)), hn::GetLane(hn::MinOfLanes(df, vmin))};
  for (; c < n; ++c) {
    const float a = std::fabs(x[c]);
    r.max_abs = std::max(r.max_abs, a);
    if (a != 0.0f) r.min_nonzero_abs = std::min(r.min_nonzero_abs, a);
  }
  return r;
}

// Whether folding 2^112 into f is exact for these tokens: x * f stays inside the normal range
// (below 2^15 and zero or above 2^-125, margins for the rounding of the check itself), so
// scaling by 2^112 commutes with the rounding; f * 2^112 is finite. (A NaN in x gives the same
// NaN on either path.)
HWY_INLINE bool Fp8FoldsExactly(float f, const AbsRange* ranges, int64_t n) {
  if (!(f < 0x1p16f)) return false;
  for (int64_t j = 0; j < n; ++j) {
    if (!(ranges[j].max_abs * f < 0x1p15f) || !(ranges[j].min_nonzero_abs * f >= 0x1p-125f)) {
      return false;
    }
  }
  return true;
}

// The block sums of decoded panel wd [nc][32] x xs rows (xs[j * kTiledCols + c], already
// scaled), stored to / added into accb. Column c's step also prefetches prefetch + c *
// prefetch_stride (null: none).
template <int kG>
HWY_INLINE void TiledGemmMicro(const float* HWY_RESTRICT wd, int64_t nc,
                               const float* HWY_RESTRICT xs, bool first, float* HWY_RESTRICT accb,
                               const uint8_t* prefetch, int64_t prefetch_stride) {
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  constexpr int64_t N = kTiledLanes;
  V acc[kTiledVecs][kG];
  ZeroAcc<kG>(df, acc);
  for (int64_t c = 0; c < nc; ++c) {
    if (prefetch != nullptr) hwy::Prefetch(prefetch + c * prefetch_stride);
    const float* HWY_RESTRICT wc = wd + c * kTileRows;
    V xv[kG];
    for (int j = 0; j < kG; ++j) xv[j] = hn::Set(df, xs[j * kTiledCols + c]);
    for (int v = 0; v < kTiledVecs; ++v) FmaColumnVec<kG>(hn::Load(df, wc + v * N), v, xv, acc);
  }
  StoreOrAdd<kG>(df, acc, first, accb);
}

// Dispatches a group of g (kG .. kMax) tokens to the fixed-size kernel F<g>.
template <template <int> class F, int kG = 1, int kMax = kTiledGroup, class... Args>
HWY_INLINE void WithGroup(int g, Args&&... args) {
  if constexpr (kG <= kMax) {
    if (g == kG) return F<kG>::run(args...);
    return WithGroup<F, kG + 1, kMax>(g, args...);
  } else {
    HWY_ASSERT(false);
  }
}
// A GEMV run of nt tiles in blocks side by side: kNT at a time, then 2 (where kNT > 2: a row range
// not ending on a kNT-tile boundary keeps 2x the chains of single tiles), then one by one.
// block(t, width) for tiles [t, t + width), width a std::integral_constant<int, 1 | 2 | kNT>.
// The bf16-dot path's 1-token runs took the 2-tile step in 21d3cee (W_UV's 2 tiles per head had run
// one by one; its 8 heads in cache 44.2 -> 58.9-60.0 GB/s in cold_stream_bench on a Zen 5 VM).
// Since 969bee7 its 1-2-token runs are one tile (Bf16GemvRun), W_UV's 2 tiles one by one again.
// Figures: docs/measurements.md#fortileblocks.
template <int kNT, class Block>
HWY_INLINE void ForTileBlocks(int nt, const Block& block) {
  int t = 0;
  if constexpr (kNT > 1) {
    for (; t + kNT <= nt; t += kNT) block(t, std::integral_constant<int, kNT>());
  }
  if constexpr (kNT > 2) {
    for (; t + 2 <= nt; t += 2) block(t, std::integral_constant<int, 2>());
  }
  for (; t < nt; ++t) block(t, std::integral_constant<int, 1>());
}

template <typename T, bool kFolded, bool kSameF>
struct GemvBlockFn {
  template <int kG>
  struct F {  // nt tiles: GemvTiles(kG) at a time, then 2, then one by one (ForTileBlocks)
    static void run(int nt, const T* wt, int64_t tile_stride, int64_t c0, int64_t c1,
                    const float* const* xr, const float* f, bool first, int64_t prefetch_bytes,
                    float* accb, int64_t accb_stride) {
      ForTileBlocks<GemvTiles(kG)>(nt, [&](int t, auto width) HWY_ATTR {
        constexpr int kN = decltype(width)::value;
        TiledGemvBlock<kG, kN, kFolded, kN == 1 || kSameF>(wt + t * tile_stride, tile_stride, c0,
                                                           c1, xr, f + t, first, prefetch_bytes,
                                                           accb + t * accb_stride, accb_stride);
      });
    }
  };
};

template <int kG>
struct GemmMicroFn {
  static void run(const float* wd, int64_t nc, const float* xs, bool first, float* accb,
                  const uint8_t* prefetch, int64_t prefetch_stride) {
    TiledGemmMicro<kG>(wd, nc, xs, first, accb, prefetch, prefetch_stride);
  }
};

// GemvBlockFn for a group of g tokens, with x broadcast once per column where the tiles share
// one x factor (same_f).
template <typename T, bool kFolded, class... Args>
HWY_INLINE void RunGemvGroup(bool same_f, int g, Args&&... args) {
  if (same_f) return WithGroup<GemvBlockFn<T, kFolded, true>::template F>(g, args...);
  WithGroup<GemvBlockFn<T, kFolded, false>::template F>(g, args...);
}

// y[t, r] for the rows of tile `ti` inside [r_begin, r_end) (accb rows: token j's 32 sums at
// accb + j * 32, row i of the tile in slot kSlot(i): TileSlot<T>; for bf16-dot Bf16Slot
// (kTiled) or RowSlot (kTiledPairs).
template <int64_t (*kSlot)(int64_t)>
HWY_INLINE void StoreTileRows(const float* HWY_RESTRICT accb, int64_t n_tok, int64_t ti,
                              int64_t r_begin, int64_t r_end, int64_t n_rows,
                              float* HWY_RESTRICT y) {
  const int64_t lo = std::max(r_begin, ti * kTileRows);
  const int64_t hi = std::min(r_end, (ti + 1) * kTileRows);
  for (int64_t j = 0; j < n_tok; ++j) {
    for (int64_t r = lo; r < hi; ++r)
      y[j * n_rows + r] = accb[j * kTileRows + kSlot(r - ti * kTileRows)];
  }
}

// GEMV: rows [r_begin, r_end) of the nt (<= kMaxGemvTiles) tiles from ti for n_tok
// (< kTiledGemmMinTokens<T>) tokens; FP8 takes the tokens' |x| ranges (`ranges`) for the fold.
template <typename T>
HWY_INLINE void TiledGemvTiles(const TiledView<T>& m, int64_t ti, int nt,
                               const float* HWY_RESTRICT x, int64_t n_tok, const AbsRange* ranges,
                               float* HWY_RESTRICT y, int64_t r_begin, int64_t r_end) {
  constexpr int64_t kAccStride = kTiledGemmMinTokens<T> * kTileRows;
  HWY_ALIGN float accb[kMaxGemvTiles * kAccStride];
  const T* wt = m.tile(ti);
  const int64_t tile_stride = kTileRows * m.n_cols;
  for (int64_t c0 = 0; c0 < m.n_cols; c0 += kTiledCols) {
    const int64_t c1 = std::min(m.n_cols, c0 + kTiledCols);
    float f[kMaxGemvTiles] = {};
    bool same_f = true;  // the tiles share one x factor (one 128-row scale block, or no scales)
    for (int t = 0; t < nt; ++t) {
      f[t] = m.x_factor(ti + t, c0);
      same_f = same_f && f[t] == f[0];
    }
    // Group p > 0 re-reads the block from L1 and (unless kNoPrefetch) prefetches p blocks further
    // on, so the DRAM stream keeps flowing through every group's pass, not only the first's.
    int64_t prefetch_bytes = GemvPrefetchBytes(GemvTiles(static_cast<int>(NextGroup(n_tok))));
    for (int64_t j0 = 0, g = 0; j0 < n_tok; j0 += g) {
      g = NextGroup(n_tok - j0);
      const float* xr[kTiledGemmMinTokens<T>];
      for (int j = 0; j < g; ++j) xr[j] = x + (j0 + j) * m.n_cols;
      const auto* xrc = static_cast<const float* const*>(xr);
      bool folded = false;
      if constexpr (std::is_same_v<T, uint8_t>) {
        float ff[kMaxGemvTiles];
        folded = true;
        for (int t = 0; t < nt; ++t) {
          folded = folded && Fp8FoldsExactly(f[t], ranges + j0, g);
          ff[t] = f[t] * kTiledFp8Fold;
        }
        if (folded) {
          RunGemvGroup<T, true>(same_f, static_cast<int>(g), nt, wt, tile_stride, c0, c1, xrc,
                                static_cast<const float*>(ff), c0 == 0, prefetch_bytes,
                                accb + j0 * kTileRows, kAccStride);
        }
      }
      if (!folded) {
        RunGemvGroup<T, false>(same_f, static_cast<int>(g), nt, wt, tile_stride, c0, c1, xrc,
                               static_cast<const float*>(f), c0 == 0, prefetch_bytes,
                               accb + j0 * kTileRows, kAccStride);
      }
      if (prefetch_bytes != kNoPrefetch)
        prefetch_bytes += kTiledCols * kTileRows * static_cast<int64_t>(sizeof(T));
    }
  }
  for (int t = 0; t < nt; ++t) {
    StoreTileRows<TileSlot<T>>(accb + t * kAccStride, n_tok, ti + t, r_begin, r_end, m.n_rows, y);
  }
}

// GEMM: the rows of tile ti inside [r_begin, r_end) for n_tok tokens, in token blocks of
// kTiledTokBlock.
template <typename T>
HWY_INLINE void TiledGemmTile(const TiledView<T>& m, int64_t ti, const float* HWY_RESTRICT x,
                              int64_t n_tok, float* HWY_RESTRICT y, int64_t r_begin,
                              int64_t r_end) {
  const hn::ScalableTag<float> df;
  constexpr int64_t N = kTiledLanes;
  HWY_ALIGN float wd[kTiledCols * kTileRows];       // decoded weights [64][32]
  HWY_ALIGN float xs[kTiledTokBlock * kTiledCols];  // scaled x [tokens][64]
  HWY_ALIGN float accb[kTiledTokBlock * kTileRows];
  const T* wt = m.tile(ti);
  for (int64_t t0 = 0; t0 < n_tok; t0 += kTiledTokBlock) {
    const int64_t nt = std::min(kTiledTokBlock, n_tok - t0);
    for (int64_t c0 = 0; c0 < m.n_cols; c0 += kTiledCols) {
      const int64_t nc = std::min(kTiledCols, m.n_cols - c0);
      // The next block (the next tile's first at the end) is requested by the first token
      // group's micro-kernel, a column per step, so its lines arrive while this block's
      // micro-kernels run: the decode alone is too short to hide DRAM latency behind the
      // hardware prefetcher, which restarts at every 4 KiB page, and a burst of 128 prefetches
      // during the decode stalled on the outstanding-miss limit (matmul_bench 16 tokens, 4c30a47:
      // BM_Gemv_BF16_Tiled 185-227 -> 210-266 GFLOP/s; docs/measurements.md#tiled-gemm-prefetch).
      const auto* next = reinterpret_cast<const uint8_t*>(wt + (c0 + kTiledCols) * kTileRows);
      for (int64_t c = 0; c < nc; ++c) {
        hn::Vec<decltype(df)> w[kTiledVecs];
        TiledColumn(df, wt + (c0 + c) * kTileRows, w);
        for (int v = 0; v < kTiledVecs; ++v) hn::Store(w[v], df, wd + c * kTileRows + v * N);
      }
      const float f = m.x_factor(ti, c0);
      for (int64_t j = 0; j < nt; ++j) {
        const float* xj = x + (t0 + j) * m.n_cols + c0;
        float* sj = xs + j * kTiledCols;
        for (int64_t c = 0; c < nc; ++c) sj[c] = xj[c] * f;  // vectorised by the compiler
      }
      for (int64_t j0 = 0, g = 0; j0 < nt; j0 += g) {
        g = NextGroup(nt - j0);
        WithGroup<GemmMicroFn>(static_cast<int>(g), static_cast<const float*>(wd), nc,
                               static_cast<const float*>(xs + j0 * kTiledCols), c0 == 0,
                               accb + j0 * kTileRows, j0 == 0 ? next : nullptr,
                               kTileRows * static_cast<int64_t>(sizeof(T)));
      }
    }
    StoreTileRows<TileSlot<T>>(accb, nt, ti, r_begin, r_end, m.n_rows, y + t0 * m.n_rows);
  }
}

// The tiles [r_begin / 32, ceil(r_end / 32)) of m for n_tok tokens: below kMinTokens tokens
// gemv(ti, nt, ranges) over runs of gemv_run tiles (FP8: with the tokens' |x| ranges for the
// fold), else gemm(ti, nt) over runs of up to kGemmRun tiles that stay inside one run-aligned
// group (kGemmRun 4: one 128-row scale block).
template <int64_t kMinTokens, int kGemmRun, typename T, class Gemv, class Gemm>
HWY_INLINE void TiledRowsWith(const TiledView<T>& m, const float* HWY_RESTRICT x, int64_t n_tok,
                              int64_t r_begin, int64_t r_end, int gemv_run, const Gemv& gemv,
                              const Gemm& gemm) {
  const int64_t ti_end = (r_end + kTileRows - 1) / kTileRows;
  if (n_tok < kMinTokens) {
    AbsRange ranges[kMinTokens];
    if constexpr (std::is_same_v<T, uint8_t>) {
      for (int64_t j = 0; j < n_tok; ++j) ranges[j] = AbsRangeOf(x + j * m.n_cols, m.n_cols);
    }
    for (int64_t ti = r_begin / kTileRows; ti < ti_end;) {
      const int nt = static_cast<int>(std::min<int64_t>(gemv_run, ti_end - ti));
      gemv(ti, nt, static_cast<const AbsRange*>(ranges));
      ti += nt;
    }
    return;
  }
  for (int64_t ti = r_begin / kTileRows; ti < ti_end;) {
    const int nt = static_cast<int>(std::min<int64_t>(kGemmRun - ti % kGemmRun, ti_end - ti));
    gemm(ti, nt);
    ti += nt;
  }
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#include "kernels/cpu/matmul_bf16-inl.h"  // MatmulArith::kBf16Dot, on the tiled helpers above

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {

// Rows [r_begin, r_end) of a tiled matrix: every tile the range touches is computed whole (its
// rows are independent lanes) and only the range's rows are stored.
template <typename T>
void TiledRows(const TiledView<T>& m, const float* HWY_RESTRICT x, int64_t n_tok,
               float* HWY_RESTRICT y, int64_t r_begin, int64_t r_end) {
  TiledRowsWith<kTiledGemmMinTokens<T>, 1>(
      m, x, n_tok, r_begin, r_end, GemvTiles(NextGroup(n_tok)),
      [&](int64_t ti, int nt, const AbsRange* ranges)
          HWY_ATTR { TiledGemvTiles(m, ti, nt, x, n_tok, ranges, y, r_begin, r_end); },
      [&](int64_t ti, int) HWY_ATTR { TiledGemmTile(m, ti, x, n_tok, y, r_begin, r_end); });
}

// Rows [r_begin, r_end) of w in its layout (tiled: F8E4M3 | BF16 | I8 only).
template <typename T>
HWY_INLINE void MatmulRowsAs(const Matrix& w, const float* scales, int64_t block, const float* x,
                             int64_t n_tok, float* y, int64_t r_begin, int64_t r_end) {
  const auto* data = static_cast<const T*>(w.data);
  if (w.layout != WeightLayout::kRowMajor) {
    const TiledView<T> v{data, scales, w.n_cols, w.n_rows};
    const bool paired = w.layout == WeightLayout::kTiledPairs;
    DSS_CHECK(!paired || (w.arith == MatmulArith::kBf16Dot && w.n_cols % 2 == 0),
              "matmul: the kTiledPairs layout is read by bf16-dot only, with an even n_cols");
    if (w.arith == MatmulArith::kBf16Dot) {
      if constexpr (kTargetHasBf16Dot && !std::is_same_v<T, int8_t>) {
        return paired ? Bf16TiledRows<true>(v, x, n_tok, y, r_begin, r_end)
                      : Bf16TiledRows<false>(v, x, n_tok, y, r_begin, r_end);
      }
      DSS_CHECK(false, "matmul: bf16-dot ", dtype_name(w.dtype), " weights on target ",
                hwy::TargetName(HWY_TARGET), " (needs tiled FP8 / BF16 on AVX3 + AVX512-BF16)");
    }
    TiledRows(v, x, n_tok, y, r_begin, r_end);
  } else {
    DSS_CHECK(w.arith == MatmulArith::kF32, "matmul: bf16-dot needs the tiled layout");
    MatmulRowsT(RowsView<T>{data, scales, w.n_cols, w.n_rows, block}, x, n_tok, y, r_begin, r_end);
  }
}

inline void MatmulRows(const Matrix& w, const float* x, int64_t n_tok, float* y, int64_t r_begin,
                       int64_t r_end) {
  DSS_CHECK(w.layout == WeightLayout::kRowMajor || w.dtype == DType::kF8E4M3 ||
                w.dtype == DType::kBF16 || w.dtype == DType::kI8,
            "matmul: tiled ", dtype_name(w.dtype), " is not supported");
  switch (w.dtype) {
    case DType::kF8E4M3:
      return MatmulRowsAs<uint8_t>(w, w.scales, kFp8BlockSize, x, n_tok, y, r_begin, r_end);
    case DType::kBF16:
      return MatmulRowsAs<uint16_t>(w, nullptr, w.n_cols, x, n_tok, y, r_begin, r_end);
    case DType::kF16:
      return MatmulRowsT(RowsView<hwy::float16_t>{static_cast<const hwy::float16_t*>(w.data),
                                                  nullptr, w.n_cols, w.n_rows, w.n_cols},
                         x, n_tok, y, r_begin, r_end);
    case DType::kF32:
      return MatmulRowsT(
          RowsView<float>{static_cast<const float*>(w.data), nullptr, w.n_cols, w.n_rows, w.n_cols},
          x, n_tok, y, r_begin, r_end);
    case DType::kI8:  // integer dot products, then y[t, r] *= scales[r]
      MatmulRowsAs<int8_t>(w, nullptr, w.n_cols, x, n_tok, y, r_begin, r_end);
      for (int64_t t = 0; t < n_tok; ++t) {
        for (int64_t r = r_begin; r < r_end; ++r) y[t * w.n_rows + r] *= w.scales[r];
      }
      return;
    default:
      DSS_CHECK(false, "matmul: unsupported weight dtype ", dtype_name(w.dtype));
  }
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_KERNELS_CPU_MATMUL_INL_H_
