// Dispatch entries for kernels/cpu/attn_tile.h; bodies in attn_tile-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attn_tile.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/attn_tile-inl.h"

#if HWY_ONCE
#include "base/check.h"
#include "kernels/cpu/attn_tile.h"

namespace dss::cpu {

HWY_EXPORT(AttnTileScores);
HWY_EXPORT(AttnTileSoftmax);
HWY_EXPORT(AttnTilePv);

void attn_tile_scores(const float* q, int64_t ldq, int64_t n_tok, const float* kt_a, int64_t d_a,
                      const float* kt_b, int64_t d_b, int64_t ld_kt, int64_t n_pos,
                      const int32_t* j_end, float* s, int64_t lds) {
  DSS_CHECK(n_pos % kAttnTileAlign == 0 && n_pos <= ld_kt && n_pos <= lds, "tile of ", n_pos,
            " positions");
  HWY_DYNAMIC_DISPATCH(AttnTileScores)
  (q, ldq, n_tok, kt_a, d_a, kt_b, d_b, ld_kt, n_pos, j_end, s, lds);
}

void attn_tile_softmax(float* s, int64_t lds, int64_t n_tok, int64_t n_pos, const int32_t* n_valid,
                       float scale, float* m, float* l, float* corr) {
  DSS_CHECK(n_pos % kAttnTileAlign == 0 && n_pos <= lds, "tile of ", n_pos, " positions");
  HWY_DYNAMIC_DISPATCH(AttnTileSoftmax)(s, lds, n_tok, n_pos, n_valid, scale, m, l, corr);
}

void attn_tile_pv(const float* p, int64_t ldp, int64_t n_tok, const int32_t* j_end, const float* v,
                  int64_t ldv, int64_t d_v, const float* corr, float* o, int64_t ldo) {
  HWY_DYNAMIC_DISPATCH(AttnTilePv)(p, ldp, n_tok, j_end, v, ldv, d_v, corr, o, ldo);
}

}  // namespace dss::cpu
#endif  // HWY_ONCE
