// MLA attention of one query token over the paged latent cache, read in place (no per-step
// conversion of the cache): the absorbed ("MQA") form of docs/deepseek-reference.md 2.3, where
// every head attends over the same cached rows, so each row is read and decoded once for all
// heads. Split-K ("flash decoding"): mla_attn_partial covers one range of the attended positions
// with an online softmax and returns (max, sum, unnormalised output); mla_attn_merge combines the
// ranges. Highway, runtime dispatch; tested against kernels/ref on every compiled target.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace dss::cpu {

// One layer of the paged MLA cache for one sequence (byte layout: docs/kv_layout.md,
// kv/kv_cache.h). The row of position p is at rows + slot(p) * row_bytes, where
// slot(p) = page_table[p / page_size] * page_size + p % page_size. Rows by dtype:
//   kF32     [d_latent f32 | d_rope f32]
//   kBF16    [d_latent bf16 | d_rope bf16]
//   kF8E4M3  [d_latent e4m3 | ceil(d_latent / 128) f32 scales | d_rope bf16]
struct MlaCacheView {
  const uint8_t* rows = nullptr;
  int64_t row_bytes = 0;
  DType dtype = DType::kF32;
  int32_t d_latent = 0, d_rope = 0;
  const int32_t* page_table = nullptr;  // the sequence's pages, in position order
  int32_t page_size = 1;
  int64_t slot(int32_t pos) const {
    return static_cast<int64_t>(page_table[pos / page_size]) * page_size + pos % page_size;
  }
  const uint8_t* row(int32_t pos) const { return rows + slot(pos) * row_bytes; }
};

// Positions per tile inside mla_attn_partial (rows decoded to f32 together).
inline constexpr int32_t kMlaAttnTile = 36;  // a multiple of the 6-row score block

// Heads padded to a multiple of every target's f32 lane count (16 on AVX-512): mla_attn_partial
// keeps scores and probabilities with the heads in vector lanes.
inline int64_t mla_heads_padded(int32_t n_heads) { return (int64_t{n_heads} + 15) / 16 * 16; }

// f32 scratch that one mla_attn_partial call needs: kMlaAttnTile * (d_latent + d_rope + Hp) +
// (d_latent + d_rope) * Hp + 3 * Hp, Hp = n_heads rounded up to a multiple of 16 (the same for
// mla_attn_partial_bf16, which uses about half of it).
int64_t mla_attn_scratch_floats(int32_t n_heads, int32_t d_latent, int32_t d_rope);

// Partial attention of one query token, all heads, over the attended positions
// pos[i_begin, i_end) (pos == nullptr: the positions i_begin .. i_end - 1 themselves).
//   q_lat [n_heads, d_latent]  absorbed query (W_UK_h^T q_nope_h), f32
//   q_pe  [n_heads, d_rope]    rotated query rope part, f32
//   score_h(p) = scale * (q_lat_h . latent(p) + q_pe_h . rope(p))
// Outputs (f32): m [n_heads] max score, l [n_heads] sum_p exp(score - m),
// o [n_heads, d_latent] sum_p exp(score - m) * latent(p). An empty range gives m = -inf, l = 0,
// o = 0. scratch: mla_attn_scratch_floats(...) floats.
void mla_attn_partial(const MlaCacheView& kv, const int32_t* pos, int64_t i_begin, int64_t i_end,
                      const float* q_lat, const float* q_pe, int32_t n_heads, float scale,
                      float* scratch, float* m, float* l, float* o);

// mla_attn_partial with vdpbf16ps, for a kBF16 cache (even d_latent and d_rope) on a CPU with
// AVX512-BF16 (cpu_features.h cpu_has_bf16_dot; elsewhere it CHECK-fails), reading the cache's
// bf16 pairs as stored. Per head: qs = bf16(fl(scale * q)) (round to nearest even, an f32
// subnormal as zero), score_h(p) = the chain over the pairs (c, c + 1) in order (latent, then
// rope) of qs . the row's values; the online softmax in f32 as mla_attn_partial (m, l of the
// unrounded exp); o = o * corr + the chain over position pairs (2k, 2k + 1) of a tile of
// bf16(exp(score - m)) . latent (a tile's odd last position paired with zero). Each pair step is
// DotBf16Pairs's (kernels/cpu/hwy_util-inl.h: the odd product added first, exact products, round
// to nearest even, subnormal results flushed). q and the probabilities in bf16, as DeepSeek's bf16
// inference holds them.
// The caches mla_attn_partial_bf16 takes (the CPU aside): bf16 rows of even widths.
inline bool mla_attn_bf16_takes(const MlaCacheView& kv) {
  return kv.dtype == DType::kBF16 && kv.d_latent % 2 == 0 && kv.d_rope % 2 == 0;
}
void mla_attn_partial_bf16(const MlaCacheView& kv, const int32_t* pos, int64_t i_begin,
                           int64_t i_end, const float* q_lat, const float* q_pe, int32_t n_heads,
                           float scale, float* scratch, float* m, float* l, float* o);

// Merges n_parts partials of mla_attn_partial (m, l: [n_parts, n_heads]; o: [n_parts, n_heads,
// d_latent], parts with l == 0 are skipped and their o is not read) into the softmax-weighted
// latent out [n_heads, d_latent] = sum_i exp(m_i - M) o_i / sum_i exp(m_i - M) l_i.
void mla_attn_merge(int32_t n_parts, const float* m, const float* l, const float* o,
                    int32_t n_heads, int32_t d_latent, float* out);

// Decodes the rows of positions pos[i] (pos == nullptr: position i) for i in [i_begin,
// i_begin + n) to f32: latent [n, d_latent] and rope [n, d_rope]. Exact for every dtype (fp8:
// code * power-of-two scale).
void mla_load_rows(const MlaCacheView& kv, const int32_t* pos, int64_t i_begin, int64_t n,
                   float* latent, float* rope);

}  // namespace dss::cpu
