// Per-target body of kernels/cpu/mla_attn.h. Included once per Highway target (foreach_target).
#if defined(DSS_KERNELS_CPU_MLA_ATTN_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef DSS_KERNELS_CPU_MLA_ATTN_INL_H_
#undef DSS_KERNELS_CPU_MLA_ATTN_INL_H_
#else
#define DSS_KERNELS_CPU_MLA_ATTN_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/cpu/hwy_util-inl.h"
#include "kernels/cpu/mla_attn.h"
#include "kernels/cpu/vec_ops-inl.h"
#include "tensor/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace dss::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out[0, n) = bf16 values at p (2-byte units, any alignment) widened to f32.
template <class DF>
HWY_INLINE void WidenBf16(DF df, const uint8_t* HWY_RESTRICT p, int64_t n,
                          float* HWY_RESTRICT out) {
  const hn::RebindToUnsigned<DF> du;
  const hn::Rebind<uint16_t, DF> d16;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const auto* p16 = reinterpret_cast<const uint16_t*>(p);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, p16 + i)))), df,
               out + i);
  }
  for (; i < n; ++i) {
    uint16_t v;
    std::memcpy(&v, p + 2 * i, 2);
    out[i] = bf16_to_f32(v);
  }
}

// out[0, n) = e4m3 codes at p times `scale` (a power of two: exact). The 7 exponent+mantissa bits
// shifted into an f32's fields give the value times 2^-120 (subnormal codes land on f32
// subnormals with the same mantissa), so multiplying by scale * 2^120 is exact.
template <class DF>
HWY_INLINE void DecodeE4m3(DF df, const uint8_t* HWY_RESTRICT p, int64_t n, float scale,
                           float* HWY_RESTRICT out) {
  const hn::RebindToUnsigned<DF> du;
  const hn::Rebind<uint8_t, DF> d8;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const auto vs = hn::Set(df, scale * 1.329227995784916e36f);  // * 2^120
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto b = hn::PromoteTo(du, hn::LoadU(d8, p + i));
    const auto mag = hn::ShiftLeft<20>(hn::And(b, hn::Set(du, 0x7Fu)));
    const auto sign = hn::ShiftLeft<24>(hn::And(b, hn::Set(du, 0x80u)));
    hn::StoreU(hn::Mul(hn::BitCast(df, hn::Or(mag, sign)), vs), df, out + i);
  }
  for (; i < n; ++i) out[i] = fp8e4m3_to_f32(p[i]) * scale;
}

// The row of position p as f32: lat [d_latent], pe [d_rope].
template <class DF>
HWY_INLINE void DecodeRow(DF df, const MlaCacheView& kv, int32_t p, float* HWY_RESTRICT lat,
                          float* HWY_RESTRICT pe) {
  const uint8_t* r = kv.rows + kv.slot(p) * kv.row_bytes;
  const int64_t R = kv.d_latent, dr = kv.d_rope;
  if (kv.dtype == DType::kF32) {
    std::memcpy(lat, r, 4 * static_cast<size_t>(R));
    std::memcpy(pe, r + 4 * R, 4 * static_cast<size_t>(dr));
  } else if (kv.dtype == DType::kBF16) {
    WidenBf16(df, r, R, lat);
    WidenBf16(df, r + 2 * R, dr, pe);
  } else {  // kF8E4M3
    const int64_t nb = (R + 127) / 128;
    for (int64_t b = 0; b < nb; ++b) {
      float s;
      std::memcpy(&s, r + R + 4 * b, 4);
      DecodeE4m3(df, r + 128 * b, std::min<int64_t>(128, R - 128 * b), s, lat + 128 * b);
    }
    WidenBf16(df, r + R + 4 * nb, dr, pe);
  }
}

inline void MlaLoadRows(const MlaCacheView& kv, const int32_t* pos, int64_t i_begin, int64_t n,
                        float* latent, float* rope) {
  const hn::ScalableTag<float> df;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t i = i_begin + j;
    DecodeRow(df, kv, pos ? pos[i] : static_cast<int32_t>(i), latent + j * kv.d_latent,
              rope + j * kv.d_rope);
  }
}

// o[0, R) = o * corr + sum_j p[j] * lat[j, 0:R)  (lat rows of stride R).
inline void AccumulateRows(float* HWY_RESTRICT o, float corr, const float* HWY_RESTRICT p,
                           const float* HWY_RESTRICT lat, int64_t nt, int64_t R) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const auto vc = hn::Set(df, corr);
  int64_t c = 0;
  for (; c + 2 * N <= R; c += 2 * N) {
    auto a0 = hn::Mul(hn::LoadU(df, o + c), vc), a1 = hn::Mul(hn::LoadU(df, o + c + N), vc);
    for (int64_t j = 0; j < nt; ++j) {
      const auto vp = hn::Set(df, p[j]);
      a0 = hn::MulAdd(vp, hn::LoadU(df, lat + j * R + c), a0);
      a1 = hn::MulAdd(vp, hn::LoadU(df, lat + j * R + c + N), a1);
    }
    hn::StoreU(a0, df, o + c);
    hn::StoreU(a1, df, o + c + N);
  }
  for (; c < R; ++c) {
    float a = o[c] * corr;
    for (int64_t j = 0; j < nt; ++j) a += p[j] * lat[j * R + c];
    o[c] = a;
  }
}

// Prefetches the cache rows of positions pos[i] (pos == nullptr: i) for i in [i_begin, i_end):
// issued for the next tile while the current one is computed, so the scattered rows a sparse
// (V3.2) selection gathers arrive from DRAM behind the arithmetic instead of stalling the decode.
inline void MlaPrefetchRows(const MlaCacheView& kv, const int32_t* pos, int64_t i_begin,
                            int64_t i_end) {
  for (int64_t i = i_begin; i < i_end; ++i) {
    const uint8_t* r = kv.rows + kv.slot(pos ? pos[i] : static_cast<int32_t>(i)) * kv.row_bytes;
    for (int64_t b = 0; b < kv.row_bytes; b += 64) hwy::Prefetch(r + b);
    hwy::Prefetch(r + kv.row_bytes - 1);  // the last line when the row is not line-aligned
  }
}

// exp(x) for x <= 0, with 0 where exp(x) would be an f32 subnormal (x < -87; exp(-87) = 1.6e-38
// is the smallest normal result). Every softmax row has a term exp(0) = 1, so a dropped term is
// below 2^-125 of the sum and of each output element's largest contribution: the same result up to
// rounding of values ~1e-38, while subnormal results (and their products) cost a microcode assist
// per operation on x86 cores - at long context most of the 2048 attended rows are that far below
// the maximum.
HWY_INLINE float ExpOrZero(float x) { return x < -87.0f ? 0.0f : std::exp(x); }

inline void MlaAttnPartial(const MlaCacheView& kv, const int32_t* pos, int64_t i_begin,
                           int64_t i_end, const float* q_lat, const float* q_pe, int32_t n_heads,
                           float scale, float* scratch, float* m, float* l, float* o) {
  const int64_t R = kv.d_latent, dr = kv.d_rope, T = kMlaAttnTile;
  float* lat = scratch;     // [T, R]
  float* pe = lat + T * R;  // [T, dr]
  float* sc = pe + T * dr;  // [n_heads, T]
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  std::fill(m, m + n_heads, kNegInf);
  std::fill(l, l + n_heads, 0.0f);
  std::fill(o, o + n_heads * R, 0.0f);
  for (int64_t i0 = i_begin; i0 < i_end; i0 += T) {
    const int64_t nt = std::min(T, i_end - i0);
    MlaLoadRows(kv, pos, i0, nt, lat, pe);
    MlaPrefetchRows(kv, pos, i0 + nt, std::min(i_end, i0 + nt + T));
    for (int32_t h = 0; h < n_heads; ++h) {
      const float* ql = q_lat + h * R;
      const float* qp = q_pe + h * dr;
      float* s = sc + h * T;
      float mx = kNegInf;
      for (int64_t j = 0; j < nt; ++j) {
        s[j] = scale * (Dot(ql, lat + j * R, R) + Dot(qp, pe + j * dr, dr));
        mx = std::max(mx, s[j]);
      }
      const float m_new = std::max(m[h], mx);
      const float corr = m[h] == kNegInf ? 0.0f : ExpOrZero(m[h] - m_new);
      float sum = 0.0f;
      for (int64_t j = 0; j < nt; ++j) {
        s[j] = ExpOrZero(s[j] - m_new);
        sum += s[j];
      }
      l[h] = l[h] * corr + sum;
      m[h] = m_new;
      AccumulateRows(o + h * R, corr, s, lat, nt, R);
    }
  }
}

inline void MlaAttnMerge(int32_t n_parts, const float* m, const float* l, const float* o,
                         int32_t n_heads, int32_t d_latent, float* out) {
  const int64_t R = d_latent;
  for (int32_t h = 0; h < n_heads; ++h) {
    float mx = -std::numeric_limits<float>::infinity();
    for (int32_t i = 0; i < n_parts; ++i) {
      if (l[i * n_heads + h] > 0.0f) mx = std::max(mx, m[i * n_heads + h]);
    }
    float denom = 0.0f;
    for (int32_t i = 0; i < n_parts; ++i) {
      if (l[i * n_heads + h] > 0.0f)
        denom += std::exp(m[i * n_heads + h] - mx) * l[i * n_heads + h];
    }
    float* y = out + h * R;
    std::fill(y, y + R, 0.0f);
    if (denom == 0.0f) continue;
    for (int32_t i = 0; i < n_parts; ++i) {
      if (l[i * n_heads + h] > 0.0f) {
        Axpy(std::exp(m[i * n_heads + h] - mx) / denom, o + (int64_t{i} * n_heads + h) * R, y, R);
      }
    }
  }
}

}  // namespace dss::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // DSS_KERNELS_CPU_MLA_ATTN_INL_H_
