// Per-target bodies of kernels/cpu/vec_ops.h.
#if defined(DSS_KERNELS_CPU_VEC_OPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DSS_KERNELS_CPU_VEC_OPS_INL_H_
#undef DSS_KERNELS_CPU_VEC_OPS_INL_H_
#else
#define DSS_KERNELS_CPU_VEC_OPS_INL_H_
#endif

#include <cmath>
#include <cstdint>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/cpu/hwy_util-inl.h"
#include "tensor/matrix.h"

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

inline float Dot(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  auto s0 = hn::Zero(df), s1 = hn::Zero(df);
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    s0 = hn::MulAdd(hn::LoadU(df, a + i), hn::LoadU(df, b + i), s0);
    s1 = hn::MulAdd(hn::LoadU(df, a + i + N), hn::LoadU(df, b + i + N), s1);
  }
  for (; i + N <= n; i += N) s0 = hn::MulAdd(hn::LoadU(df, a + i), hn::LoadU(df, b + i), s0);
  float s = ReduceSumF(df, hn::Add(s0, s1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

inline void Axpy(float a, const float* HWY_RESTRICT x, float* HWY_RESTRICT y, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const auto va = hn::Set(df, a);
  int64_t i = 0;
  for (; i + N <= n; i += N)
    hn::StoreU(hn::MulAdd(va, hn::LoadU(df, x + i), hn::LoadU(df, y + i)), df, y + i);
  // The tail with the same MulAdd on 1-lane vectors, so every element rounds alike.
  const hn::CappedTag<float, 1> d1;
  for (; i < n; ++i)
    hn::StoreU(hn::MulAdd(hn::Set(d1, a), hn::LoadU(d1, x + i), hn::LoadU(d1, y + i)), d1, y + i);
}

template <class DF>
HWY_INLINE hn::Vec<DF> LoadNormWeight(DF df, const Vector& w, int64_t i) {
  if (w.dtype == DType::kBF16) {
    const hn::RebindToUnsigned<DF> du;
    const hn::Rebind<uint16_t, DF> d16;
    const auto* p = static_cast<const uint16_t*>(w.data) + i;
    return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, p))));
  }
  return hn::LoadU(df, static_cast<const float*>(w.data) + i);
}

inline void RmsNorm(const float* x, const Vector& w, int64_t n, float eps, float* y) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  auto ss = hn::Zero(df);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(df, x + i);
    ss = hn::MulAdd(v, v, ss);
  }
  float sum = ReduceSumF(df, ss);
  for (; i < n; ++i) sum += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
  const bool vec_w = w.dtype == DType::kBF16 || w.dtype == DType::kF32;
  const auto vinv = hn::Set(df, inv);
  i = 0;
  if (vec_w) {
    for (; i + N <= n; i += N) {
      hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(df, x + i), vinv), LoadNormWeight(df, w, i)), df, y + i);
    }
  }
  for (; i < n; ++i) y[i] = x[i] * inv * w.at(i);
}

inline void SiluMul(const float* gate, const float* up, int64_t n, float* y) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const auto one = hn::Set(df, 1.0f);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto g = hn::LoadU(df, gate + i);
    const auto sig = hn::Div(one, hn::Add(one, hn::Exp(df, hn::Neg(g))));
    hn::StoreU(hn::Mul(hn::Mul(g, sig), hn::LoadU(df, up + i)), df, y + i);
  }
  for (; i < n; ++i) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

inline void Softmax(float* x, int64_t n) {
  if (n <= 0) return;
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  float m = x[0];
  for (int64_t i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
  const auto vm = hn::Set(df, m);
  auto vs = hn::Zero(df);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto e = hn::Exp(df, hn::Sub(hn::LoadU(df, x + i), vm));
    hn::StoreU(e, df, x + i);
    vs = hn::Add(vs, e);
  }
  float s = ReduceSumF(df, vs);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    s += x[i];
  }
  const auto vinv = hn::Set(df, 1.0f / s);
  i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Mul(hn::LoadU(df, x + i), vinv), df, x + i);
  for (; i < n; ++i) x[i] *= 1.0f / s;
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_KERNELS_CPU_VEC_OPS_INL_H_
