// Scalar reference kernels: the ground truth that every optimised kernel is tested against.
// Straightforward loops with double accumulation; never on the hot path.
#pragma once

#include <cstdint>

#include "kernels/cpu/mla_attn.h"  // MlaCacheView only (a plain struct)
#include "tensor/matrix.h"

namespace dss::ref {

// y[t, r] = sum_c W[r, c] * x[t, c]   x: [n_tok, w.n_cols], y: [n_tok, w.n_rows]
// W is dequantised per element exactly as Matrix::at does (fp8 * block scale, one f32 product).
void matmul(const Matrix& w, const float* x, int64_t n_tok, float* y);

// y = x / sqrt(mean(x^2) + eps) * w   (x, y: [n]; y may alias x)
void rmsnorm(const float* x, const Vector& w, int64_t n, float eps, float* y);

// y = silu(gate) * up = gate / (1 + exp(-gate)) * up   (all [n]; y may alias gate)
void silu_mul(const float* gate, const float* up, int64_t n, float* y);

// In-place softmax over x[0, n).
void softmax(float* x, int64_t n);

// Interleaved (GPT-J) rotary embedding on one vector of d values: pair i = (x[2i], x[2i+1])
// rotates by angle with cos[i], sin[i] (i < d/2).
void rope_interleaved(float* x, int64_t d, const float* cos, const float* sin);

double dot(const float* a, const float* b, int64_t n);

// W8A8 FP8 activation quantise + dequantise per row per 128 columns (contract: cpu/act_quant.h):
// s = max(amax, 1e-4) / 448, or with ue8m0 the power of two 2^ceil(log2(max(amax, 1e-4) / 448));
// y = e4m3_rne(clamp(x / s, -448, 448)) * s. Written from the scalar e4m3 codec of tensor/dtype.h.
void act_quant_fp8(const float* x, int64_t n_tok, int64_t n_cols, bool ue8m0, float* y);

// One cached MLA row (contract: cpu/mla_attn.h MlaCacheView) as f32, written from the scalar
// codecs of tensor/dtype.h: lat [d_latent], pe [d_rope].
void mla_load_row(const cpu::MlaCacheView& kv, int32_t pos, float* lat, float* pe);

// Absorbed MLA attention of one query token over positions pos[0, n) (nullptr: 0 .. n-1), in
// double with a plain (two-pass) softmax: out [n_heads, d_latent] = sum_p softmax_p(score)
// latent(p), score_h(p) = scale * (q_lat_h . latent(p) + q_pe_h . rope(p)) (contract:
// cpu/mla_attn.h).
void mla_attn(const cpu::MlaCacheView& kv, const int32_t* pos, int64_t n, const float* q_lat,
              const float* q_pe, int32_t n_heads, float scale, float* out);

// One query of plain attention over positions pos[0, n), in double with a two-pass softmax
// (contract: cpu/attn_tile.h, whose tiles and online softmax compose to this):
// out [d_v] = sum_p softmax_p(scale * q . k_p) v_p, q and k_p [d_qk], k_p = k + pos[p] * ldk,
// v_p = v + pos[p] * ldv.
void attention(const float* q, const float* k, int64_t ldk, int64_t d_qk, const float* v,
               int64_t ldv, int64_t d_v, const int32_t* pos, int64_t n, float scale, float* out);

// V3.2 lightning-indexer scores (contract: cpu/indexer_score.h), double accumulation:
// scores[i] = key_scales[i] * sum_h coef[h] * max(0, dot(q[h, :], e4m3_to_f32(keys_t[:, i]))),
// keys_t [D, ld] (transposed keys).
void index_scores(const uint8_t* keys_t, int64_t ld, const float* key_scales, int64_t n,
                  const float* q, const float* coef, int32_t HI, int32_t D, float* scores);

// The k highest-scoring indices (ties -> lower index), increasing index order, by partial_sort
// with `score[x] > score[y] || (score[x] == score[y] && x < y)` as the model first did it.
void top_k_indices(const float* scores, int64_t n, int64_t k, int32_t* out);

}  // namespace dss::ref
