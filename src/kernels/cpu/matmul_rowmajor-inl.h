// Per-target row-major matmul (tensor/matrix.h WeightLayout::kRowMajor: `--weight-layout mmap`,
// the weights read in place) and the weight loads it shares with the tiled f32 path (LoadWeights).
// Included by matmul-inl.h before the tiled path.
#if defined(DSS_KERNELS_CPU_MATMUL_ROWMAJOR_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DSS_KERNELS_CPU_MATMUL_ROWMAJOR_INL_H_
#undef DSS_KERNELS_CPU_MATMUL_ROWMAJOR_INL_H_
#else
#define DSS_KERNELS_CPU_MATMUL_ROWMAJOR_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "kernels/cpu/hwy_util-inl.h"
#include "tensor/matrix.h"

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Lanes(df) weights starting at `p`, widened to f32; FP8 codes are also multiplied by `scale`.
//
// FP8: DecodeE4m3Shifted (the e4m3 value times 2^-120, hwy_util-inl.h) times the caller's
// scale * 2^120 (kDecodeScale), so the product is the single rounding fl(fp8 * scale): exactly
// the reference dequantisation. (25% faster than going through F16C on the AVX2 dev VM.)
template <class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const uint8_t* HWY_RESTRICT p, hn::Vec<DF> scale) {
  return hn::Mul(DecodeE4m3Shifted(df, p), scale);
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const uint16_t* HWY_RESTRICT p, hn::Vec<DF>) {  // bf16
  const hn::RebindToUnsigned<DF> du;
  const hn::Rebind<uint16_t, DF> d16;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, p))));
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const hwy::float16_t* HWY_RESTRICT p, hn::Vec<DF>) {
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::LoadU(dh, p));
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const float* HWY_RESTRICT p, hn::Vec<DF>) {
  return hn::LoadU(df, p);
}
// INT8 (per-output-channel): the integers widened exactly; the row scale is applied to the
// finished dot product (MatmulRows), so the block-scale argument is unused.
template <class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const int8_t* HWY_RESTRICT p, hn::Vec<DF>) {
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<int8_t, DF> d8;
  return hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, p)));
}

inline float ScalarWeight(const uint8_t* p, int64_t i) { return fp8e4m3_to_f32(p[i]); }
inline float ScalarWeight(const uint16_t* p, int64_t i) { return bf16_to_f32(p[i]); }
inline float ScalarWeight(const hwy::float16_t* p, int64_t i) {
  uint16_t b;
  std::memcpy(&b, p + i, 2);
  return f16_to_f32(b);
}
inline float ScalarWeight(const float* p, int64_t i) { return p[i]; }
inline float ScalarWeight(const int8_t* p, int64_t i) { return static_cast<float>(p[i]); }

// The factor LoadWeights expects on top of the block scale (2^120 for DecodeE4m3Shifted).
template <typename T>
constexpr float kDecodeScale = std::is_same_v<T, uint8_t> ? 0x1p120f : 1.0f;

// One row-major weight matrix as the row kernels see it. `block` is the column (and row) block
// sharing one scale: 128 for FP8, n_cols (one block, no scale) otherwise.
template <typename TW>
struct RowsView {
  using T = TW;
  const T* HWY_RESTRICT w;           // [n_rows, n_cols] row-major
  const float* HWY_RESTRICT scales;  // FP8: [ceil(n_rows/block), ceil(n_cols/block)]; else null
  int64_t n_cols, n_rows, block;
  // Row r's scales (indexed by column block), or null. One division per call: hoist it out of
  // the column loops (a divide per block per row costs as much as the block's FMAs).
  const float* scale_row(int64_t r) const {
    return scales ? scales + (r / block) * ((n_cols + block - 1) / block) : nullptr;
  }
  const T* row_base(int64_t r) const { return w + r * n_cols; }
};

// Horizontal sums of four vectors, [sum(a), sum(b), sum(c), sum(d)] to out[0..4): two rounds of
// interleave + add leave each 128-bit block holding the four partial sums, then the blocks are
// added (9 ops for 4 sums on AVX2 instead of 4 full reductions).
#if HWY_TARGET == HWY_SCALAR
template <class DF>
HWY_INLINE void SumOfLanes4(DF df, hn::Vec<DF> a, hn::Vec<DF> b, hn::Vec<DF> c, hn::Vec<DF> d,
                            float* HWY_RESTRICT out) {
  out[0] = ReduceSumF(df, a);
  out[1] = ReduceSumF(df, b);
  out[2] = ReduceSumF(df, c);
  out[3] = ReduceSumF(df, d);
}
#else
template <class D>
HWY_INLINE void AddBlocksStore(D d, hn::Vec<D> v, float* HWY_RESTRICT out) {
  if constexpr (hn::MaxLanes(d) <= 4) {
    hn::StoreU(v, d, out);
  } else {
    const hn::Half<D> dh;
    AddBlocksStore(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)), out);
  }
}
template <class DF>
HWY_INLINE void SumOfLanes4(DF df, hn::Vec<DF> a, hn::Vec<DF> b, hn::Vec<DF> c, hn::Vec<DF> d,
                            float* HWY_RESTRICT out) {
  const hn::Repartition<double, DF> dd;
  const auto ab = hn::Add(hn::InterleaveLower(df, a, b), hn::InterleaveUpper(df, a, b));
  const auto cd = hn::Add(hn::InterleaveLower(df, c, d), hn::InterleaveUpper(df, c, d));
  const auto ab64 = hn::BitCast(dd, ab), cd64 = hn::BitCast(dd, cd);
  const auto abcd = hn::Add(hn::BitCast(df, hn::InterleaveLower(dd, ab64, cd64)),
                            hn::BitCast(df, hn::InterleaveUpper(dd, ab64, cd64)));
  AddBlocksStore(df, abcd, out);
}
#endif

// The sums of n (<= 4) accumulators in the canonical lane order of SumOfLanes4 (lanes never mix,
// so the zero padding does not change a sum): every tile shape reduces a given (row, token) dot
// product identically, which keeps results independent of the batch size, the chunking and the
// thread split.
template <class DF>
HWY_INLINE void CanonicalSums(DF df, const hn::Vec<DF>* acc, int n, float* HWY_RESTRICT out) {
  const auto z = hn::Zero(df);
  SumOfLanes4(df, acc[0], n > 1 ? acc[1] : z, n > 2 ? acc[2] : z, n > 3 ? acc[3] : z, out);
}

// The canonical dot product of weight row r and token row x (both paths compute exactly this):
// per panel of kGemmCols columns, lane-wise FMAs over the whole vectors in column order, the lanes
// summed in CanonicalSums order, then the ragged columns added one by one; the first panel's value
// is stored, later panels' are added.
inline constexpr int64_t kGemmCols = 1024;  // panel width; a multiple of the FP8 block (128)

// GEMV tile (8 x 1, 4 x 2, 2 x 3, 2 x 4 rows x tokens): kR weight rows (r .. r+kR) against kT token
// rows of x ([kT, n_cols], row stride n_cols); every weight vector is decoded in registers once and
// used kT times, and the kR x kT independent accumulator chains hide the FMA latency (one row alone
// is latency-bound). Results go to y[k * n_rows + r + i] (y already offset to the first token).
template <int kR, int kT, class View>
HWY_INLINE void GemvTile(const View& m, int64_t r, const float* HWY_RESTRICT x,
                         float* HWY_RESTRICT y) {
  static_assert(kT >= 1 && kT <= 4, "CanonicalSums reduces up to 4 accumulators at once");
  using T = typename View::T;
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t n_cols = m.n_cols;
  const float* srow[kR];
  const T* base[kR];
  for (int i = 0; i < kR; ++i) srow[i] = m.scale_row(r + i);
  for (int i = 0; i < kR; ++i) base[i] = m.row_base(r + i);
  for (int64_t p0 = 0; p0 < n_cols; p0 += kGemmCols) {
    const int64_t p1 = std::min(n_cols, p0 + kGemmCols);
    V acc[kR][kT];
    for (int i = 0; i < kR; ++i) {
      for (int j = 0; j < kT; ++j) acc[i][j] = hn::Zero(df);
    }
    int64_t c = p0;
    float s[kR] = {};
    int64_t cb = p0 / m.block;  // column block of p0 (panels are block-aligned)
    for (int64_t c_begin = p0; c_begin < p1; c_begin += m.block, ++cb) {
      const int64_t c_end = std::min(p1, c_begin + m.block);
      V vs[kR];
      for (int i = 0; i < kR; ++i) {
        s[i] = srow[i] ? srow[i][cb] : 1.0f;
        vs[i] = hn::Set(df, s[i] * kDecodeScale<T>);
      }
      for (c = c_begin; c + N <= c_end; c += N) {
        V xv[kT];
        for (int j = 0; j < kT; ++j) xv[j] = hn::LoadU(df, x + j * n_cols + c);
        for (int i = 0; i < kR; ++i) {
          const V wv = LoadWeights(df, base[i] + c, vs[i]);
          for (int j = 0; j < kT; ++j) acc[i][j] = hn::MulAdd(wv, xv[j], acc[i][j]);
        }
      }
    }
    // Only the last block of the panel can be ragged (blocks are multiples of Lanes).
    for (int i = 0; i < kR; ++i) {
      float sums[kT < 4 ? 4 : kT];
      CanonicalSums(df, acc[i], kT, sums);
      for (int j = 0; j < kT; ++j) {
        float t = sums[j];
        for (int64_t cc = c; cc < p1; ++cc) {
          const float w = ScalarWeight(base[i], cc);
          t += (m.scales ? w * s[i] : w) * x[j * n_cols + cc];
        }
        float& out = y[j * m.n_rows + r + i];
        out = p0 == 0 ? t : out + t;
      }
    }
  }
}

// Rows [r_begin, r_end) for kT tokens: tiles of kR rows, then single rows.
template <int kR, int kT, class View>
HWY_INLINE void GemvRows(const View& m, const float* x, float* y, int64_t r_begin, int64_t r_end) {
  int64_t r = r_begin;
  for (; r + kR <= r_end; r += kR) GemvTile<kR, kT>(m, r, x, y);
  for (; r < r_end; ++r) GemvTile<1, kT>(m, r, x, y);
}

// GEMM path (many tokens). The weights of kGemmRows rows x kGemmCols columns are decoded once to
// f32 on the stack, then every token of a block of kGemmTokBlock tokens is multiplied against
// them in register tiles of kGemmRows rows x kGemmTok tokens (12 accumulators; per column vector
// 3 weight and 4 x loads feed 12 FMAs); partial dot products per column block are added into y.
// Decoding costs one pass over the weights per token block instead of one per token tile, and the
// token block of x
// ([64, kGemmCols] f32 = 256 KiB) stays in L2.
inline constexpr int64_t kGemmRows = 3;
inline constexpr int64_t kGemmTok = 4;
inline constexpr int64_t kGemmTokBlock = 64;

// Decodes rows [r, r + kGemmRows) x columns [c0, c0 + n) to `out` ([kGemmRows, kGemmCols] f32,
// fully scaled: fl(fp8 * scale) for FP8). Rows past n_rows are not touched.
template <class View>
HWY_INLINE void DecodePanel(const View& m, int64_t r, int64_t n_r, int64_t c0, int64_t n,
                            float* HWY_RESTRICT out) {
  using T = typename View::T;
  const hn::ScalableTag<float> df;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t i = 0; i < n_r; ++i) {
    const T* HWY_RESTRICT wr = m.row_base(r + i);
    float* HWY_RESTRICT o = out + i * kGemmCols;
    const float* srow = m.scale_row(r + i);
    int64_t cb = c0 / m.block;  // panels are block-aligned
    for (int64_t c_begin = c0; c_begin < c0 + n; c_begin += m.block, ++cb) {
      const int64_t c_end = std::min(c0 + n, c_begin + m.block);
      const float s = srow ? srow[cb] : 1.0f;
      const auto vs = hn::Set(df, s * kDecodeScale<T>);
      int64_t c = c_begin;
      for (; c + N <= c_end; c += N) hn::Store(LoadWeights(df, wr + c, vs), df, o + (c - c0));
      for (; c < c_end; ++c) {
        const float w = ScalarWeight(wr, c);
        o[c - c0] = m.scales ? w * s : w;
      }
    }
  }
}

// kR decoded rows (stride kGemmCols) x kT tokens (x stride ldx) over n columns; writes (first
// column panel) or adds the dot products to y[j * ldy + i].
template <int kR, int kT, bool kAdd>
HWY_INLINE void GemmTile(const float* HWY_RESTRICT wd, int64_t n, const float* HWY_RESTRICT x,
                         int64_t ldx, float* HWY_RESTRICT y, int64_t ldy) {
  static_assert(kT >= 1 && kT <= 4, "CanonicalSums reduces up to 4 accumulators at once");
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  V acc[kR][kT];
  for (int i = 0; i < kR; ++i) {
    for (int j = 0; j < kT; ++j) acc[i][j] = hn::Zero(df);
  }
  int64_t c = 0;
  for (; c + N <= n; c += N) {
    V wv[kR];
    for (int i = 0; i < kR; ++i) wv[i] = hn::Load(df, wd + i * kGemmCols + c);
    for (int j = 0; j < kT; ++j) {
      const V xv = hn::LoadU(df, x + j * ldx + c);
      for (int i = 0; i < kR; ++i) acc[i][j] = hn::MulAdd(wv[i], xv, acc[i][j]);
    }
  }
  for (int i = 0; i < kR; ++i) {
    float sums[kT < 4 ? 4 : kT];
    CanonicalSums(df, acc[i], kT, sums);
    for (int j = 0; j < kT; ++j) {
      float t = sums[j];
      for (int64_t cc = c; cc < n; ++cc) t += wd[i * kGemmCols + cc] * x[j * ldx + cc];
      if constexpr (kAdd) {
        y[j * ldy + i] += t;
      } else {
        y[j * ldy + i] = t;
      }
    }
  }
}

template <class View>
void GemmRows(const View& m, const float* HWY_RESTRICT x, int64_t n_tok, float* HWY_RESTRICT y,
              int64_t r_begin, int64_t r_end) {
  HWY_ALIGN float wd[kGemmRows * kGemmCols];
  const int64_t n_cols = m.n_cols, n_rows = m.n_rows;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kGemmTokBlock) {
    const int64_t t1 = std::min(n_tok, t0 + kGemmTokBlock);
    for (int64_t r = r_begin; r < r_end; r += kGemmRows) {
      const int64_t n_r = std::min(kGemmRows, r_end - r);
      for (int64_t c0 = 0; c0 < n_cols; c0 += kGemmCols) {
        const int64_t n = std::min(kGemmCols, n_cols - c0);
        DecodePanel(m, r, n_r, c0, n, wd);
        const float* xc = x + c0;
        float* yr = y + r;
        int64_t t = t0;
        if (n_r == kGemmRows) {
          for (; t + kGemmTok <= t1; t += kGemmTok) {
            if (c0 == 0) {
              GemmTile<kGemmRows, kGemmTok, false>(wd, n, xc + t * n_cols, n_cols, yr + t * n_rows,
                                                   n_rows);
            } else {
              GemmTile<kGemmRows, kGemmTok, true>(wd, n, xc + t * n_cols, n_cols, yr + t * n_rows,
                                                  n_rows);
            }
          }
        }
        for (; t < t1; ++t) {
          for (int64_t i = 0; i < n_r; ++i) {
            if (c0 == 0) {
              GemmTile<1, 1, false>(wd + i * kGemmCols, n, xc + t * n_cols, n_cols,
                                    yr + t * n_rows + i, n_rows);
            } else {
              GemmTile<1, 1, true>(wd + i * kGemmCols, n, xc + t * n_cols, n_cols,
                                   yr + t * n_rows + i, n_rows);
            }
          }
        }
      }
    }
  }
}

// Token counts from which the GEMM path (decode once per token block) beats decoding in registers
// per tile of <= 4 tokens.
inline constexpr int64_t kGemmMinTokens = 5;

// Rows [r_begin, r_end) of the weights `m` views.
template <class View>
void MatmulRowsT(const View& m, const float* HWY_RESTRICT x, int64_t n_tok, float* HWY_RESTRICT y,
                 int64_t r_begin, int64_t r_end) {
  if (n_tok >= kGemmMinTokens) return GemmRows(m, x, n_tok, y, r_begin, r_end);
  switch (n_tok) {
    case 4:
      return GemvRows<2, 4>(m, x, y, r_begin, r_end);
    case 3:
      return GemvRows<2, 3>(m, x, y, r_begin, r_end);
    case 2:
      return GemvRows<4, 2>(m, x, y, r_begin, r_end);
    case 1:
      return GemvRows<8, 1>(m, x, y, r_begin, r_end);
    default:
      return;
  }
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_KERNELS_CPU_MATMUL_ROWMAJOR_INL_H_
