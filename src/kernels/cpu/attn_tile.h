// Flash-attention building blocks for one head over one tile of key/value positions: the MLA
// naive (prefill) form, where K and V are expanded per tile from the cached latent and a chunk's
// tokens are the queries. Per tile: S = Q K^T (attn_tile_scores), the online-softmax update of
// each token's row (attn_tile_softmax), O = O * corr + P V (attn_tile_pv). Positions are in
// vector lanes for the scores and the softmax, value dimensions for P V, so no result needs a
// horizontal sum. Highway, runtime dispatch; tested against kernels/ref on every compiled target.
//
// Canonical arithmetic (what makes a token's result independent of how many tokens are computed
// together, i.e. of batching and chunked prefill): every S element is one FMA chain over the
// query dimensions in order; a row's softmax depends only on that row, its valid length and the
// tile width; every P V element is one FMA chain over the positions in order, and positions past
// a token's valid length contribute exact zeros wherever a wider group computes them.
#pragma once

#include <cstdint>

namespace dss::cpu {

// Positions per tile must be a multiple of this (every target's f32 lane count divides it).
inline constexpr int64_t kAttnTileAlign = 16;

// S[i, j] = sum_c q[i, c] * kt(c, j) for tokens i < n_tok and at least the positions
// j < j_end[i] (j_end == nullptr: all n_pos); other S elements of row i are left unspecified.
// The query dimensions are two segments: c < d_a reads kt_a[c * ld_kt + j], then c < d_a + d_b
// reads kt_b[(c - d_a) * ld_kt + j] (MLA: the per-head nope keys, then the rope key all heads
// share). q: row i at q + i * ldq, d_a + d_b values; s: row i at s + i * lds.
// n_pos: a multiple of kAttnTileAlign, <= ld_kt and <= lds.
void attn_tile_scores(const float* q, int64_t ldq, int64_t n_tok, const float* kt_a, int64_t d_a,
                      const float* kt_b, int64_t d_b, int64_t ld_kt, int64_t n_pos,
                      const int32_t* j_end, float* s, int64_t lds);

// Online-softmax step of each token's row over this tile. Row i of s holds scores; positions
// j < n_valid[i] are attended unless their score is -inf (masked, e.g. V3.2's unselected
// positions), j >= n_valid[i] are not (their contents are ignored). With x_j = s[i, j] * scale
// and M = max(m[i], max_j x_j) over the attended positions:
//   s[i, j] := exp(x_j - M) for attended j, 0 for every other j < n_pos;
//   corr[i] := exp(m[i] - M) (0 while m[i] = -inf); l[i] := l[i] * corr[i] + sum_j s[i, j];
//   m[i] := M.
// A row with nothing attended is zeroed with corr[i] = 1 and m, l unchanged. exp underflows to 0
// below exp(-87) (no f32 subnormals); the row sum is accumulated lane-wise in position order.
void attn_tile_softmax(float* s, int64_t lds, int64_t n_tok, int64_t n_pos, const int32_t* n_valid,
                       float scale, float* m, float* l, float* corr);

// o[i, e] := o[i, e] * corr[i] + sum_{j < j_end[i]} p[i, j] * v[j * ldv + e] for e < d_v (two
// roundings: the rescale, then the add of the chain). p[i, j] must be 0 for j >= j_end[i] up to
// the group's largest j_end (attn_tile_softmax's zero fill), v rows below max j_end finite.
// o: row i at o + i * ldo; p: row i at p + i * ldp.
void attn_tile_pv(const float* p, int64_t ldp, int64_t n_tok, const int32_t* j_end, const float* v,
                  int64_t ldv, int64_t d_v, const float* corr, float* o, int64_t ldo);

}  // namespace dss::cpu
