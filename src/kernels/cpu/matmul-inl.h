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

inline float ScalarWeight(const uint8_t* p, int64_t i) { return fp8e4m3_to_f32(p[i]); }
inline float ScalarWeight(const uint16_t* p, int64_t i) { return bf16_to_f32(p[i]); }
inline float ScalarWeight(const float* p, int64_t i) { return p[i]; }

// Rows [r_begin, r_end) for weights of element type T, 4 tokens per pass over a weight row.
// `block` is the column block sharing one scale (n_cols when `scales` is null).
template <typename T>
void MatmulRowsT(const T* HWY_RESTRICT w, const float* HWY_RESTRICT scales, int64_t n_cols,
                 int64_t n_rows, int64_t block, const float* HWY_RESTRICT x, int64_t n_tok,
                 float* HWY_RESTRICT y, int64_t r_begin, int64_t r_end) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t n_scale_cols = (n_cols + block - 1) / block;
  constexpr float k2p120 = 1.329227995784916e36f;  // 2^120
  constexpr int64_t kTok = 4;
  for (int64_t r = r_begin; r < r_end; ++r) {
    const T* HWY_RESTRICT wr = w + r * n_cols;
    const float* HWY_RESTRICT srow = scales ? scales + (r / block) * n_scale_cols : nullptr;
    for (int64_t t0 = 0; t0 < n_tok; t0 += kTok) {
      const int64_t nt = std::min(kTok, n_tok - t0);
      const float* x0 = x + t0 * n_cols;
      const float* x1 = x0 + (nt > 1 ? n_cols : 0);  // duplicate rows are computed, not stored
      const float* x2 = x0 + (nt > 2 ? 2 * n_cols : 0);
      const float* x3 = x0 + (nt > 3 ? 3 * n_cols : 0);
      float tail[kTok] = {0, 0, 0, 0};
      auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
      for (int64_t cb = 0; cb < n_scale_cols; ++cb) {
        const int64_t c_begin = cb * block, c_end = std::min(n_cols, c_begin + block);
        const float s = srow ? srow[cb] : 1.0f;
        const auto vs = hn::Set(df, s * k2p120);
        int64_t c = c_begin;
        for (; c + N <= c_end; c += N) {
          const auto wv = LoadWeights(df, wr + c, vs);
          a0 = hn::MulAdd(wv, hn::LoadU(df, x0 + c), a0);
          a1 = hn::MulAdd(wv, hn::LoadU(df, x1 + c), a1);
          a2 = hn::MulAdd(wv, hn::LoadU(df, x2 + c), a2);
          a3 = hn::MulAdd(wv, hn::LoadU(df, x3 + c), a3);
        }
        for (; c < c_end; ++c) {  // ragged tail of the block
          const float wv = srow ? ScalarWeight(wr, c) * s : ScalarWeight(wr, c);
          tail[0] += wv * x0[c];
          tail[1] += wv * x1[c];
          tail[2] += wv * x2[c];
          tail[3] += wv * x3[c];
        }
      }
      const float total[kTok] = {ReduceSumF(df, a0) + tail[0], ReduceSumF(df, a1) + tail[1],
                                 ReduceSumF(df, a2) + tail[2], ReduceSumF(df, a3) + tail[3]};
      for (int64_t k = 0; k < nt; ++k) y[(t0 + k) * n_rows + r] = total[k];
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
