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

#include "base/check.h"
#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
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

// out[0, n) = e4m3 codes at p times `scale` (a power of two: exact): DecodeE4m3Shifted (the
// value times 2^-120) times scale * 2^120.
template <class DF>
HWY_INLINE void DecodeE4m3(DF df, const uint8_t* HWY_RESTRICT p, int64_t n, float scale,
                           float* HWY_RESTRICT out) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const auto vs = hn::Set(df, scale * 0x1p120f);
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Mul(DecodeE4m3Shifted(df, p + i), vs), df, out + i);
  for (; i < n; ++i) out[i] = fp8e4m3_to_f32(p[i]) * scale;
}

// The row of position p as f32: lat [d_latent], pe [d_rope].
template <class DF>
HWY_INLINE void DecodeRow(DF df, const MlaCacheView& kv, int32_t p, float* HWY_RESTRICT lat,
                          float* HWY_RESTRICT pe) {
  const uint8_t* r = kv.row(p);
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

// Rows a decode prefetches ahead of the one it reads. A decoded row is ~100 instructions of
// dependent loads and stores, so the out-of-order window holds about one scattered row's DRAM miss
// at a time; prefetching a few rows ahead keeps several in flight. Contiguous positions too: a
// decode step's rows were evicted by the step's weight stream (the hardware prefetcher, it seems,
// does not run far enough ahead of a context's rows): the f32 path's attention at batch 16 ran
// 4.3-5.6% faster with the hints (bench-model --ab-variants 2, 43079d2, Zen 5 VM), the bf16 path's
// less; in cache they cost a few percent. Figures: docs/measurements.md#krowprefetchahead.
inline constexpr int64_t kRowPrefetchAhead = 4;

// The cache position of attended row i: pos[i], or i where pos == nullptr (contiguous).
HWY_INLINE int32_t PosAt(const int32_t* pos, int64_t i) {
  return pos != nullptr ? pos[i] : static_cast<int32_t>(i);
}

// Prefetches (a hint, nothing is read) every cache line of the row of position p.
HWY_INLINE void PrefetchRow(const MlaCacheView& kv, int32_t p) {
  const uint8_t* r = kv.row(p);
  for (int64_t b = 0; b < kv.row_bytes; b += 64) hwy::Prefetch(r + b);
  hwy::Prefetch(r + kv.row_bytes - 1);  // the last line when the row starts mid-line
}

// Decodes positions pos[i] (pos == nullptr: i) for i in [i_begin, i_begin + n); also prefetches
// the row kRowPrefetchAhead further on while that is below
// i_prefetch_end (position PosAt(pos, i_prefetch_end - 1) must be in the view).
inline void MlaLoadRows(const MlaCacheView& kv, const int32_t* pos, int64_t i_begin, int64_t n,
                        float* latent, float* rope, int64_t i_prefetch_end) {
  const hn::ScalableTag<float> df;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t i = i_begin + j;
    if (i + kRowPrefetchAhead < i_prefetch_end) PrefetchRow(kv, PosAt(pos, i + kRowPrefetchAhead));
    DecodeRow(df, kv, PosAt(pos, i), latent + j * kv.d_latent, rope + j * kv.d_rope);
  }
}

// Scores of rows [j0, j0 + kRows) for head vectors [v0, v0 + kHV): st[j, heads] =
// sum_c qt[c, heads] * row_j[c] over the latent (R values, stride R) then the rope part (dr, stride
// dr), one FMA chain per (row, head) in c order. Rows in registers as broadcasts, heads in lanes.
template <int kRows, int kHV, class DF>
HWY_INLINE void ScoreRows(DF df, const float* HWY_RESTRICT qt, int64_t Hp, int64_t v0,
                          const float* HWY_RESTRICT lat, int64_t R, const float* HWY_RESTRICT pe,
                          int64_t dr, int64_t j0, float* HWY_RESTRICT st) {
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  hn::Vec<DF> acc[kRows * kHV];
  for (int i = 0; i < kRows * kHV; ++i) acc[i] = hn::Zero(df);
  auto part = [&](const float* HWY_RESTRICT rows, int64_t stride, int64_t n_c, int64_t c_off) {
    for (int64_t c = 0; c < n_c; ++c) {
      hn::Vec<DF> qv[kHV];
      for (int u = 0; u < kHV; ++u) qv[u] = hn::LoadU(df, qt + (c_off + c) * Hp + (v0 + u) * N);
      for (int r = 0; r < kRows; ++r) {
        const auto b = hn::Set(df, rows[(j0 + r) * stride + c]);
        for (int u = 0; u < kHV; ++u) acc[r * kHV + u] = hn::MulAdd(qv[u], b, acc[r * kHV + u]);
      }
    }
  };
  part(lat, R, R, 0);
  part(pe, dr, dr, R);
  for (int r = 0; r < kRows; ++r) {
    for (int u = 0; u < kHV; ++u)
      hn::StoreU(acc[r * kHV + u], df, st + (j0 + r) * Hp + (v0 + u) * N);
  }
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// ScoreRows with vdpbf16ps (AVX512-BF16) on a bf16 cache: st[j, heads] = the chain over the
// row's (d_latent + d_rope) / 2 bf16 pairs in order (latent, then rope) of qp[pair, heads] . the
// row's pair, read from the cache row itself (rows[r]: row j0 + r as 32-bit pairs, the even
// element low). qp holds bf16(fl(scale * q)) pairs (MlaAttnPartialT).
template <int kRows, int kHV>
HWY_INLINE void ScoreRowsBf16(const uint32_t* HWY_RESTRICT qp, int64_t Hp, int64_t v0,
                              const uint32_t* const* rows, int64_t n_col_pairs, int64_t j0,
                              float* HWY_RESTRICT st) {
  const hn::ScalableTag<float> df;
  const hn::ScalableTag<uint32_t> du;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  hn::Vec<decltype(df)> acc[kRows * kHV];
  for (int i = 0; i < kRows * kHV; ++i) acc[i] = hn::Zero(df);
  for (int64_t c = 0; c < n_col_pairs; ++c) {
    hn::Vec<decltype(du)> qv[kHV];
    for (int u = 0; u < kHV; ++u) qv[u] = hn::LoadU(du, qp + c * Hp + (v0 + u) * N);
    for (int r = 0; r < kRows; ++r) {
      const auto b = hn::Set(du, rows[r][c]);
      for (int u = 0; u < kHV; ++u) acc[r * kHV + u] = DotBf16Pairs(acc[r * kHV + u], qv[u], b);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int u = 0; u < kHV; ++u)
      hn::StoreU(acc[r * kHV + u], df, st + (j0 + r) * Hp + (v0 + u) * N);
  }
}

// 16-bit lane indices for _mm512_permutex2var_epi16 / permutexvar: words (a_k, b_k) for k in
// [k0, k0 + 16) as 16 pairs, a the first source (indices 0-31), b at b_base on.
inline __m512i PairWordsIndex(int k0, int b_base) {
  alignas(64) int16_t idx[32];
  for (int k = 0; k < 16; ++k) {
    idx[2 * k] = static_cast<int16_t>(k0 + k);
    idx[2 * k + 1] = static_cast<int16_t>(b_base + k0 + k);
  }
  return _mm512_load_si512(idx);
}

// Rows [0, n_rows) of `rows` (f32 [n_rows, Hp], heads in lanes) as bf16 pairs in place: pair row
// p (rows 2p and 2p + 1, an odd last row paired with zero; per head lane the even row's word low)
// is Hp uint32 over row p, which pair p / 2 has already read. Returns the pair rows.
HWY_INLINE const uint32_t* Bf16PairRowsInPlace(float* HWY_RESTRICT rows, int64_t n_rows,
                                               int64_t Hp) {
  const hn::ScalableTag<float> df;
  const hn::ScalableTag<uint32_t> du;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  const __m512i interleave = PairWordsIndex(0, 16);
  auto* out = reinterpret_cast<uint32_t*>(rows);
  for (int64_t p = 0; 2 * p < n_rows; ++p) {
    for (int64_t h = 0; h < Hp; h += N) {
      const auto a = hn::LoadU(df, rows + 2 * p * Hp + h);
      const auto b = 2 * p + 1 < n_rows ? hn::LoadU(df, rows + (2 * p + 1) * Hp + h) : hn::Zero(df);
      const hn::Vec512<uint32_t> words{_mm512_permutexvar_epi16(interleave, Bf16PairsOf(a, b).raw)};
      hn::StoreU(words, du, out + p * Hp + h);
    }
  }
  return out;
}

// The 16 x 16 32-bit words at in[r * in_stride + c] transposed to out[c * out_stride + r]
// (unpacks of 32- and 64-bit words, then two rounds of 128-bit block shuffles).
HWY_INLINE void Transpose16x16Words(const uint32_t* HWY_RESTRICT in, int64_t in_stride,
                                    uint32_t* HWY_RESTRICT out, int64_t out_stride) {
  __m512i r[16], a[16], b[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(in + i * in_stride);
  for (int i = 0; i < 8; ++i) {  // lane k: rows 2i, 2i + 1 at columns 4k .. 4k + 3, interleaved
    a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // b[4i + j], lane k: column 4k + j of rows 4i .. 4i + 3
    b[4 * i + 0] = _mm512_unpacklo_epi64(a[4 * i + 0], a[4 * i + 2]);
    b[4 * i + 1] = _mm512_unpackhi_epi64(a[4 * i + 0], a[4 * i + 2]);
    b[4 * i + 2] = _mm512_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
    b[4 * i + 3] = _mm512_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
  }
  for (int j = 0; j < 4; ++j) {  // column 4k + j: lane k of b[j], b[4 + j], b[8 + j], b[12 + j]
    const __m512i c0 = _mm512_shuffle_i32x4(b[j], b[4 + j], 0x44);
    const __m512i c1 = _mm512_shuffle_i32x4(b[j], b[4 + j], 0xEE);
    const __m512i d0 = _mm512_shuffle_i32x4(b[8 + j], b[12 + j], 0x44);
    const __m512i d1 = _mm512_shuffle_i32x4(b[8 + j], b[12 + j], 0xEE);
    _mm512_storeu_si512(out + (0 + j) * out_stride, _mm512_shuffle_i32x4(c0, d0, 0x88));
    _mm512_storeu_si512(out + (4 + j) * out_stride, _mm512_shuffle_i32x4(c0, d0, 0xDD));
    _mm512_storeu_si512(out + (8 + j) * out_stride, _mm512_shuffle_i32x4(c1, d1, 0x88));
    _mm512_storeu_si512(out + (12 + j) * out_stride, _mm512_shuffle_i32x4(c1, d1, 0xDD));
  }
}

// The query as Bf16PairRowsInPlace leaves qt (pair row p, head lane h: bf16(fl(scale * q_h[2p]))
// low, bf16(fl(scale * q_h[2p + 1])) high, q_h = q_lat_h then q_pe_h, heads [H, Hp) zero), built
// per head row (the pairs of 32 columns by one vcvtne2ps2bf16) into tmp [16, (R + dr) / 2] and
// transposed 16 heads at a time into out [(R + dr) / 2, Hp]; R and dr multiples of 32. The same
// words as transposing scale * q into qt first and pairing its rows (a scalar loop of (R + dr) x
// Hp elements, ~15% of the samples of a 128-position call): the decode attention per forward at
// batch 16 -12% (bench-model --ab-variants 2, 4aeeaed, Zen 5 VM;
// docs/measurements.md#querypairrows). Returns out.
HWY_INLINE const uint32_t* QueryPairRows(const float* HWY_RESTRICT q_lat, int64_t R,
                                         const float* HWY_RESTRICT q_pe, int64_t dr, int64_t H,
                                         int64_t Hp, float scale, float* HWY_RESTRICT tmp_f,
                                         float* HWY_RESTRICT out_f) {
  const hn::ScalableTag<float> df;
  const hn::ScalableTag<uint32_t> du;
  const auto vs = hn::Set(df, scale);
  const int64_t P = (R + dr) / 2;  // a multiple of 16
  auto* tmp = reinterpret_cast<uint32_t*>(tmp_f);
  auto* out = reinterpret_cast<uint32_t*>(out_f);
  auto pairs = [&](const float* HWY_RESTRICT x, int64_t n, uint32_t* HWY_RESTRICT o) {
    for (int64_t c = 0; c < n; c += 32) {
      hn::StoreU(
          Bf16PairsOf(hn::Mul(hn::LoadU(df, x + c), vs), hn::Mul(hn::LoadU(df, x + c + 16), vs)),
          du, o + c / 2);
    }
  };
  for (int64_t h0 = 0; h0 < Hp; h0 += 16) {
    for (int64_t i = 0; i < 16; ++i) {
      uint32_t* row = tmp + i * P;
      const int64_t h = h0 + i;
      if (h < H) {
        pairs(q_lat + h * R, R, row);
        pairs(q_pe + h * dr, dr, row + R / 2);
      } else {
        std::fill(row, row + P, 0u);
      }
    }
    for (int64_t p0 = 0; p0 < P; p0 += 16) Transpose16x16Words(tmp + p0, P, out + p0 * Hp + h0, Hp);
  }
  return out;
}

// A bf16 word as vdpbf16ps reads it (a subnormal as zero), and its flushing of subnormal sums.
inline float Bf16Value(uint16_t w) { return (w & 0x7F80u) == 0 ? 0.0f : bf16_to_f32(w); }
inline float FlushSubnormal(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? 0.0f : v; }

// latp[q * R + c] for the tile's row pairs q < ceil(nt / 2): rows i0 + 2q (low word) and
// i0 + 2q + 1 (high; zero past nt) of latent column c, read from the bf16 cache as stored;
// rows prefetched kRowPrefetchAhead ahead as MlaLoadRows does.
HWY_INLINE void LatentPairs(const MlaCacheView& kv, const int32_t* pos, int64_t i0, int64_t nt,
                            int64_t i_prefetch_end, uint32_t* HWY_RESTRICT latp) {
  const int64_t R = kv.d_latent;
  const __m512i lo_idx = PairWordsIndex(0, 32), hi_idx = PairWordsIndex(16, 32);
  auto row = [&](int64_t i) { return reinterpret_cast<const uint16_t*>(kv.row(PosAt(pos, i))); };
  for (int64_t q = 0; 2 * q < nt; ++q) {
    const int64_t i = i0 + 2 * q;
    for (int64_t k = i; k < std::min(i + 2, i_prefetch_end - kRowPrefetchAhead); ++k)
      PrefetchRow(kv, PosAt(pos, k + kRowPrefetchAhead));
    const uint16_t* a = row(i);
    const uint16_t* b = 2 * q + 1 < nt ? row(i + 1) : nullptr;
    uint32_t* out = latp + q * R;
    int64_t c = 0;
    for (; c + 32 <= R; c += 32) {
      const __m512i va = _mm512_loadu_si512(a + c);
      const __m512i vb = b != nullptr ? _mm512_loadu_si512(b + c) : _mm512_setzero_si512();
      _mm512_storeu_si512(out + c, _mm512_permutex2var_epi16(va, lo_idx, vb));
      _mm512_storeu_si512(out + c + 16, _mm512_permutex2var_epi16(va, hi_idx, vb));
    }
    for (; c < R; ++c) out[c] = a[c] | (b != nullptr ? uint32_t{b[c]} << 16 : 0u);
  }
}

// AccumulateOut with vdpbf16ps: o[h, c] = o * corr[h], then per row pair q in order
// DotBf16Pairs(o, latp[q, c], pp[q, h]) (the odd row's product added first), for heads
// [h0, h0 + kH) and kCV vectors of c from c0.
template <int kH, int kCV>
HWY_INLINE void AccumulateOutBf16(const uint32_t* HWY_RESTRICT pp, int64_t Hp, int64_t h0,
                                  const float* HWY_RESTRICT corr, const uint32_t* HWY_RESTRICT latp,
                                  int64_t R, int64_t n_pos_pairs, int64_t c0,
                                  float* HWY_RESTRICT o) {
  const hn::ScalableTag<float> df;
  const hn::ScalableTag<uint32_t> du;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  hn::Vec<decltype(df)> acc[kH * kCV];
  for (int h = 0; h < kH; ++h) {
    const auto vc = hn::Set(df, corr[h0 + h]);
    for (int k = 0; k < kCV; ++k)
      acc[h * kCV + k] = hn::Mul(hn::LoadU(df, o + (h0 + h) * R + c0 + k * N), vc);
  }
  for (int64_t q = 0; q < n_pos_pairs; ++q) {
    hn::Vec<decltype(du)> lv[kCV];
    for (int k = 0; k < kCV; ++k) lv[k] = hn::LoadU(du, latp + q * R + c0 + k * N);
    for (int h = 0; h < kH; ++h) {
      const auto b = hn::Set(du, pp[q * Hp + h0 + h]);
      for (int k = 0; k < kCV; ++k) acc[h * kCV + k] = DotBf16Pairs(acc[h * kCV + k], lv[k], b);
    }
  }
  for (int h = 0; h < kH; ++h) {
    for (int k = 0; k < kCV; ++k) hn::StoreU(acc[h * kCV + k], df, o + (h0 + h) * R + c0 + k * N);
  }
}

template <int kH>
HWY_INLINE void AccumulateOutHeadsBf16(const uint32_t* HWY_RESTRICT pp, int64_t Hp, int64_t h0,
                                       const float* HWY_RESTRICT corr,
                                       const uint32_t* HWY_RESTRICT latp, int64_t R,
                                       int64_t n_pos_pairs, float* HWY_RESTRICT o) {
  constexpr int64_t N = 16;
  int64_t c = 0;
  for (; c + 3 * N <= R; c += 3 * N)
    AccumulateOutBf16<kH, 3>(pp, Hp, h0, corr, latp, R, n_pos_pairs, c, o);
  for (; c + N <= R; c += N) AccumulateOutBf16<kH, 1>(pp, Hp, h0, corr, latp, R, n_pos_pairs, c, o);
  for (; c < R; ++c) {  // scalar tail: vdpbf16ps's steps (exact products, one rounding each)
    for (int h = 0; h < kH; ++h) {
      float a = FlushSubnormal(o[(h0 + h) * R + c] * corr[h0 + h]);  // vdpbf16ps: DAZ
      for (int64_t q = 0; q < n_pos_pairs; ++q) {
        const uint32_t w = latp[q * R + c], pw = pp[q * Hp + h0 + h];
        a = FlushSubnormal(a + Bf16Value(static_cast<uint16_t>(w >> 16)) *
                                   Bf16Value(static_cast<uint16_t>(pw >> 16)));
        a = FlushSubnormal(a + Bf16Value(static_cast<uint16_t>(w)) *
                                   Bf16Value(static_cast<uint16_t>(pw)));
      }
      o[(h0 + h) * R + c] = a;
    }
  }
}
#endif

// o[h, c-block] = o * corr[h] + sum_{j < nt} p[j, h] * lat[j, c-block] for heads [h0, h0 + kH)
// and kCV vectors of c from c0; one FMA chain per output element in j order.
template <int kH, int kCV, class DF>
HWY_INLINE void AccumulateOut(DF df, const float* HWY_RESTRICT st, int64_t Hp, int64_t h0,
                              const float* HWY_RESTRICT corr, const float* HWY_RESTRICT lat,
                              int64_t R, int64_t nt, int64_t c0, float* HWY_RESTRICT o) {
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  hn::Vec<DF> acc[kH * kCV];
  for (int h = 0; h < kH; ++h) {
    const auto vc = hn::Set(df, corr[h0 + h]);
    for (int k = 0; k < kCV; ++k)
      acc[h * kCV + k] = hn::Mul(hn::LoadU(df, o + (h0 + h) * R + c0 + k * N), vc);
  }
  for (int64_t j = 0; j < nt; ++j) {
    hn::Vec<DF> lv[kCV];
    for (int k = 0; k < kCV; ++k) lv[k] = hn::LoadU(df, lat + j * R + c0 + k * N);
    for (int h = 0; h < kH; ++h) {
      const auto b = hn::Set(df, st[j * Hp + h0 + h]);
      for (int k = 0; k < kCV; ++k) acc[h * kCV + k] = hn::MulAdd(b, lv[k], acc[h * kCV + k]);
    }
  }
  for (int h = 0; h < kH; ++h) {
    for (int k = 0; k < kCV; ++k) hn::StoreU(acc[h * kCV + k], df, o + (h0 + h) * R + c0 + k * N);
  }
}

template <int kH, class DF>
HWY_INLINE void AccumulateOutHeads(DF df, const float* HWY_RESTRICT st, int64_t Hp, int64_t h0,
                                   const float* HWY_RESTRICT corr, const float* HWY_RESTRICT lat,
                                   int64_t R, int64_t nt, float* HWY_RESTRICT o) {
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  int64_t c = 0;
  for (; c + 3 * N <= R; c += 3 * N) AccumulateOut<kH, 3>(df, st, Hp, h0, corr, lat, R, nt, c, o);
  for (; c + N <= R; c += N) AccumulateOut<kH, 1>(df, st, Hp, h0, corr, lat, R, nt, c, o);
  for (; c < R; ++c) {  // scalar tail: the same chain per element
    for (int h = 0; h < kH; ++h) {
      float a = o[(h0 + h) * R + c] * corr[h0 + h];
      for (int64_t j = 0; j < nt; ++j) a = std::fma(st[j * Hp + h0 + h], lat[j * R + c], a);
      o[(h0 + h) * R + c] = a;
    }
  }
}

// Scratch layout (floats): lat [T, R] | pe [T, dr] | qt [R + dr, Hp] | st [T, Hp] | mh, lh, corr
// [Hp] each, T = kMlaAttnTile (a multiple of the 6-row score block), Hp = mla_heads_padded(H).
// kBf16 (AVX3 targets, a kBF16 cache, a CPU with AVX512-BF16): mla_attn_partial_bf16's contract
// (kernels/cpu/mla_attn.h): the scores by ScoreRowsBf16 from qp = bf16(fl(scale * q)) pairs (in
// the qt region: QueryPairRows, or where R or dr is not a multiple of 32 qt below converted in
// place) and the cache's rows as stored, the softmax in f32, P V by
// AccumulateOutBf16 from the tile's probability pairs (in st, in place) and row pairs (latp, in
// the lat region).
// Long by design: one register-tiled kernel body whose tile loop keeps its vectors and running
// softmax state in locals; split, they would go through memory between the calls.
template <bool kBf16>
inline void MlaAttnPartialT(const MlaCacheView& kv, const int32_t* pos, int64_t i_begin,
                            int64_t i_end, const float* q_lat, const float* q_pe, int32_t n_heads,
                            float scale, float* scratch, float* m, float* l, float* o) {
  const hn::ScalableTag<float> df;
  const auto N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t R = kv.d_latent, dr = kv.d_rope, T = kMlaAttnTile, H = n_heads;
  const int64_t Hp = mla_heads_padded(n_heads), HV = Hp / N;
  constexpr int kRows = 6;
  static_assert(kMlaAttnTile % kRows == 0);
  float* lat = scratch;            // [T, R]
  float* pe = lat + T * R;         // [T, dr]
  float* qt = pe + T * dr;         // [R + dr, Hp]: scale * q, transposed, zero-padded heads (or
                                   // qp, the bf16 path's pair rows)
  float* st = qt + (R + dr) * Hp;  // [T, Hp]: scores, then probabilities
  float* mh = st + T * Hp;         // [Hp] running max
  float* lh = mh + Hp;             // [Hp] running sum
  float* corr = lh + Hp;           // [Hp] rescale of the previous tiles
  [[maybe_unused]] const uint32_t* qp = nullptr;  // kBf16: qt as pair rows [(R + dr) / 2, Hp]
  [[maybe_unused]] auto* latp = reinterpret_cast<uint32_t*>(lat);  // [ceil(T / 2), R] row pairs
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if constexpr (kBf16) {
    // The lat region (T x R floats, free until the first tile) holds the per-head pair rows.
    if (R % 32 == 0 && dr % 32 == 0 && 8 * (R + dr) <= T * R)
      qp = QueryPairRows(q_lat, R, q_pe, dr, H, Hp, scale, lat, qt);
  }
#endif
  if (qp == nullptr) {
    for (int64_t c = 0; c < R + dr; ++c) {
      for (int64_t h = 0; h < Hp; ++h)
        qt[c * Hp + h] = h < H ? scale * (c < R ? q_lat[h * R + c] : q_pe[h * dr + c - R]) : 0.0f;
    }
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    if constexpr (kBf16) qp = Bf16PairRowsInPlace(qt, R + dr, Hp);
#endif
  }
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  std::fill(mh, mh + Hp, kNegInf);
  std::fill(lh, lh + Hp, 0.0f);
  std::fill(o, o + H * R, 0.0f);
  // The first rows' misses in flight together.
  for (int64_t i = i_begin; i < std::min(i_end, i_begin + kRowPrefetchAhead); ++i)
    PrefetchRow(kv, PosAt(pos, i));
  for (int64_t i0 = i_begin; i0 < i_end; i0 += T) {
    const int64_t nt = std::min(T, i_end - i0);
    const int64_t nb = (nt + kRows - 1) / kRows * kRows;  // rows [nt, nb): zeros, scores unused
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    if constexpr (kBf16) LatentPairs(kv, pos, i0, nt, i_end, latp);
#endif
    if constexpr (!kBf16) {
      MlaLoadRows(kv, pos, i0, nt, lat, pe, i_end);
      std::fill(lat + nt * R, lat + nb * R, 0.0f);
      std::fill(pe + nt * dr, pe + nb * dr, 0.0f);
    }
    for (int64_t j0 = 0; j0 < nb; j0 += kRows) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
      if constexpr (kBf16) {
        // Rows past nt (scores unused) repeat the last row. One head vector (up to 16 heads)
        // scores 12 rows at a time where two 6-row blocks remain: 12 vdpbf16ps chains instead of
        // 6 (each (row, head) chain is the same either way).
        const bool wide = HV == 1 && j0 + 2 * kRows <= nb;
        const uint32_t* rows[2 * kRows];
        for (int r = 0; r < (wide ? 2 : 1) * kRows; ++r) {
          const int64_t i = i0 + std::min<int64_t>(j0 + r, nt - 1);
          rows[r] = reinterpret_cast<const uint32_t*>(kv.row(PosAt(pos, i)));
        }
        if (wide) {
          ScoreRowsBf16<2 * kRows, 1>(qp, Hp, 0, rows, (R + dr) / 2, j0, st);
          j0 += kRows;
          continue;
        }
        int64_t v = 0;
        for (; v + 2 <= HV; v += 2) ScoreRowsBf16<kRows, 2>(qp, Hp, v, rows, (R + dr) / 2, j0, st);
        for (; v < HV; ++v) ScoreRowsBf16<kRows, 1>(qp, Hp, v, rows, (R + dr) / 2, j0, st);
        continue;
      }
#endif
      int64_t v = 0;
      for (; v + 2 <= HV; v += 2) ScoreRows<kRows, 2>(df, qt, Hp, v, lat, R, pe, dr, j0, st);
      for (; v < HV; ++v) ScoreRows<kRows, 1>(df, qt, Hp, v, lat, R, pe, dr, j0, st);
    }
    // Online softmax, heads in lanes.
    for (int64_t h = 0; h < Hp; h += N) {
      auto mx = hn::Set(df, kNegInf);
      for (int64_t j = 0; j < nt; ++j) mx = hn::Max(mx, hn::LoadU(df, st + j * Hp + h));
      const auto m_old = hn::LoadU(df, mh + h);
      const auto m_new = hn::Max(m_old, mx);
      const auto cr = ExpOrZero(df, hn::Sub(m_old, m_new));  // m_old = -inf: 0
      auto sum = hn::Zero(df);
      for (int64_t j = 0; j < nt; ++j) {
        const auto p = ExpOrZero(df, hn::Sub(hn::LoadU(df, st + j * Hp + h), m_new));
        hn::StoreU(p, df, st + j * Hp + h);
        sum = hn::Add(sum, p);
      }
      hn::StoreU(hn::MulAdd(hn::LoadU(df, lh + h), cr, sum), df, lh + h);
      hn::StoreU(m_new, df, mh + h);
      hn::StoreU(cr, df, corr + h);
    }
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    if constexpr (kBf16) {
      // The probabilities as bf16 pair rows (the odd last one with zero), in place in st.
      const uint32_t* pp = Bf16PairRowsInPlace(st, nt, Hp);
      const int64_t n_pairs = (nt + 1) / 2;
      int64_t h = 0;
      for (; h + 4 <= H; h += 4) AccumulateOutHeadsBf16<4>(pp, Hp, h, corr, latp, R, n_pairs, o);
      for (; h < H; ++h) AccumulateOutHeadsBf16<1>(pp, Hp, h, corr, latp, R, n_pairs, o);
      continue;
    }
#endif
    int64_t h = 0;
    for (; h + 4 <= H; h += 4) AccumulateOutHeads<4>(df, st, Hp, h, corr, lat, R, nt, o);
    for (; h < H; ++h) AccumulateOutHeads<1>(df, st, Hp, h, corr, lat, R, nt, o);
  }

  std::copy(mh, mh + H, m);
  std::copy(lh, lh + H, l);
}

inline void MlaAttnPartial(const MlaCacheView& kv, const int32_t* pos, int64_t i_begin,
                           int64_t i_end, const float* q_lat, const float* q_pe, int32_t n_heads,
                           float scale, float* scratch, float* m, float* l, float* o) {
  MlaAttnPartialT<false>(kv, pos, i_begin, i_end, q_lat, q_pe, n_heads, scale, scratch, m, l, o);
}

// mla_attn_partial_bf16 (kernels/cpu/mla_attn.h): only where the target has vdpbf16ps.
// (Other targets: parameters unused, the call refused.)
inline void MlaAttnPartialBf16(const MlaCacheView& kv, [[maybe_unused]] const int32_t* pos,
                               [[maybe_unused]] int64_t i_begin, [[maybe_unused]] int64_t i_end,
                               [[maybe_unused]] const float* q_lat,
                               [[maybe_unused]] const float* q_pe, [[maybe_unused]] int32_t n_heads,
                               [[maybe_unused]] float scale, [[maybe_unused]] float* scratch,
                               [[maybe_unused]] float* m, [[maybe_unused]] float* l,
                               [[maybe_unused]] float* o) {
  DSS_CHECK(mla_attn_bf16_takes(kv), "mla_attn_partial_bf16: needs a bf16 cache with even widths");
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  return MlaAttnPartialT<true>(kv, pos, i_begin, i_end, q_lat, q_pe, n_heads, scale, scratch, m, l,
                               o);
#endif
  DSS_CHECK(false, "mla_attn_partial_bf16 on target ", hwy::TargetName(HWY_TARGET),
            " (needs AVX3 + AVX512-BF16)");
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
