// Per-target body of kernels/cpu/matmul.h. Included once per Highway target (foreach_target).
#if defined(DSS_KERNELS_CPU_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DSS_KERNELS_CPU_MATMUL_INL_H_
#undef DSS_KERNELS_CPU_MATMUL_INL_H_
#else
#define DSS_KERNELS_CPU_MATMUL_INL_H_
#endif

#include <algorithm>
#include <cstdint>

#include "hwy/highway.h"
#include "kernels/cpu/hwy_util-inl.h"
#include "tensor/matrix.h"

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Lanes(df) weights starting at `p`, widened to f32 and multiplied by `scale` (FP8 only).
// e4m3fn decode without a table: the 7 exponent+mantissa bits shifted into an f32's exponent and
// mantissa fields give the value times 2^-120 (subnormal codes land on f32 subnormals with the same
// mantissa, so they are exact too); the caller passes scale * 2^120, so the product is the single
// rounding fl(fp8 * scale) - exactly the reference dequantisation. NaN codes are not expected.
template <class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const uint8_t* HWY_RESTRICT p, hn::Vec<DF> scale) {
  const hn::RebindToUnsigned<DF> du;
  const hn::Rebind<uint8_t, DF> d8;
  const auto b = hn::PromoteTo(du, hn::LoadU(d8, p));
  const auto mag = hn::ShiftLeft<20>(hn::And(b, hn::Set(du, 0x7Fu)));
  const auto sign = hn::ShiftLeft<24>(hn::And(b, hn::Set(du, 0x80u)));
  return hn::Mul(hn::BitCast(df, hn::Or(mag, sign)), scale);
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const uint16_t* HWY_RESTRICT p, hn::Vec<DF>) {  // bf16
  const hn::RebindToUnsigned<DF> du;
  const hn::Rebind<uint16_t, DF> d16;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, p))));
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
inline float ScalarWeight(const float* p, int64_t i) { return p[i]; }
inline float ScalarWeight(const int8_t* p, int64_t i) { return static_cast<float>(p[i]); }

// One weight row against kTok (1..4) token rows: every weight vector is decoded once and used
// kTok times. Results go to y[(t0 + k) * n_rows + r].
template <int kTok, typename T>
HWY_INLINE void MatmulRowTile(const T* HWY_RESTRICT wr, const float* HWY_RESTRICT srow,
                              int64_t n_cols, int64_t block, const float* HWY_RESTRICT x0,
                              float* HWY_RESTRICT y0, int64_t n_rows) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t n_scale_cols = (n_cols + block - 1) / block;
  constexpr float k2p120 = 1.329227995784916e36f;  // 2^120
  const float* x1 = x0 + (kTok > 1 ? n_cols : 0);
  const float* x2 = x0 + (kTok > 2 ? 2 * n_cols : 0);
  const float* x3 = x0 + (kTok > 3 ? 3 * n_cols : 0);
  float tail[4] = {0, 0, 0, 0};
  auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
  for (int64_t cb = 0; cb < n_scale_cols; ++cb) {
    const int64_t c_begin = cb * block, c_end = std::min(n_cols, c_begin + block);
    const float s = srow ? srow[cb] : 1.0f;
    const auto vs = hn::Set(df, s * k2p120);
    int64_t c = c_begin;
    for (; c + N <= c_end; c += N) {
      const auto wv = LoadWeights(df, wr + c, vs);
      a0 = hn::MulAdd(wv, hn::LoadU(df, x0 + c), a0);
      if constexpr (kTok > 1) a1 = hn::MulAdd(wv, hn::LoadU(df, x1 + c), a1);
      if constexpr (kTok > 2) a2 = hn::MulAdd(wv, hn::LoadU(df, x2 + c), a2);
      if constexpr (kTok > 3) a3 = hn::MulAdd(wv, hn::LoadU(df, x3 + c), a3);
    }
    for (; c < c_end; ++c) {  // ragged tail of the block
      const float wv = srow ? ScalarWeight(wr, c) * s : ScalarWeight(wr, c);
      tail[0] += wv * x0[c];
      if constexpr (kTok > 1) tail[1] += wv * x1[c];
      if constexpr (kTok > 2) tail[2] += wv * x2[c];
      if constexpr (kTok > 3) tail[3] += wv * x3[c];
    }
  }
  y0[0] = ReduceSumF(df, a0) + tail[0];
  if constexpr (kTok > 1) y0[n_rows] = ReduceSumF(df, a1) + tail[1];
  if constexpr (kTok > 2) y0[2 * n_rows] = ReduceSumF(df, a2) + tail[2];
  if constexpr (kTok > 3) y0[3 * n_rows] = ReduceSumF(df, a3) + tail[3];
}

// Rows [r_begin, r_end) for weights of element type T, up to 4 tokens per pass over a weight row.
// `block` is the column block sharing one scale (n_cols when `scales` is null).
template <typename T>
void MatmulRowsT(const T* HWY_RESTRICT w, const float* HWY_RESTRICT scales, int64_t n_cols,
                 int64_t n_rows, int64_t block, const float* HWY_RESTRICT x, int64_t n_tok,
                 float* HWY_RESTRICT y, int64_t r_begin, int64_t r_end) {
  const int64_t n_scale_cols = (n_cols + block - 1) / block;
  for (int64_t r = r_begin; r < r_end; ++r) {
    const T* HWY_RESTRICT wr = w + r * n_cols;
    const float* HWY_RESTRICT srow = scales ? scales + (r / block) * n_scale_cols : nullptr;
    int64_t t0 = 0;
    for (; t0 + 4 <= n_tok; t0 += 4)
      MatmulRowTile<4>(wr, srow, n_cols, block, x + t0 * n_cols, y + t0 * n_rows + r, n_rows);
    switch (n_tok - t0) {
      case 3:
        MatmulRowTile<3>(wr, srow, n_cols, block, x + t0 * n_cols, y + t0 * n_rows + r, n_rows);
        break;
      case 2:
        MatmulRowTile<2>(wr, srow, n_cols, block, x + t0 * n_cols, y + t0 * n_rows + r, n_rows);
        break;
      case 1:
        MatmulRowTile<1>(wr, srow, n_cols, block, x + t0 * n_cols, y + t0 * n_rows + r, n_rows);
        break;
      default:
        break;
    }
  }
}

inline void MatmulRows(const Matrix& w, const float* x, int64_t n_tok, float* y, int64_t r_begin,
                       int64_t r_end) {
  switch (w.dtype) {
    case DType::kF8E4M3:
      MatmulRowsT(static_cast<const uint8_t*>(w.data), w.scales, w.n_cols, w.n_rows, kFp8BlockSize,
                  x, n_tok, y, r_begin, r_end);
      return;
    case DType::kBF16:
      MatmulRowsT(static_cast<const uint16_t*>(w.data), nullptr, w.n_cols, w.n_rows, w.n_cols, x,
                  n_tok, y, r_begin, r_end);
      return;
    case DType::kF32:
      MatmulRowsT(static_cast<const float*>(w.data), nullptr, w.n_cols, w.n_rows, w.n_cols, x,
                  n_tok, y, r_begin, r_end);
      return;
    case DType::kI8:  // integer dot products, then y[t, r] *= scales[r]
      MatmulRowsT(static_cast<const int8_t*>(w.data), nullptr, w.n_cols, w.n_rows, w.n_cols, x,
                  n_tok, y, r_begin, r_end);
      for (int64_t t = 0; t < n_tok; ++t) {
        for (int64_t r = r_begin; r < r_end; ++r) y[t * w.n_rows + r] *= w.scales[r];
      }
      return;
    default: {  // F16: scalar (rare in DeepSeek checkpoints)
      for (int64_t t = 0; t < n_tok; ++t) {
        for (int64_t r = r_begin; r < r_end; ++r) {
          float acc = 0.0f;
          for (int64_t c = 0; c < w.n_cols; ++c) acc += w.at(r, c) * x[t * w.n_cols + c];
          y[t * w.n_rows + r] = acc;
        }
      }
    }
  }
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_KERNELS_CPU_MATMUL_INL_H_
