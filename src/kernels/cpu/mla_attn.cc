// Dispatch entries for kernels/cpu/mla_attn.h; bodies in mla_attn-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/mla_attn.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/mla_attn-inl.h"

#if HWY_ONCE
#include "base/check.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/mla_attn.h"

namespace dss::cpu {

HWY_EXPORT(MlaAttnPartial);
HWY_EXPORT(MlaAttnPartialBf16);
HWY_EXPORT(MlaAttnMerge);
HWY_EXPORT(MlaLoadRows);

int64_t mla_attn_scratch_floats(int32_t n_heads, int32_t d_latent, int32_t d_rope) {
  const int64_t Hp = mla_heads_padded(n_heads), C = int64_t{d_latent} + d_rope;
  return int64_t{kMlaAttnTile} * (C + Hp) + C * Hp + 3 * Hp;
}

void mla_attn_partial(const MlaCacheView& kv, const int32_t* pos, int64_t i_begin, int64_t i_end,
                      const float* q_lat, const float* q_pe, int32_t n_heads, float scale,
                      float* scratch, float* m, float* l, float* o) {
  HWY_DYNAMIC_DISPATCH(MlaAttnPartial)
  (kv, pos, i_begin, i_end, q_lat, q_pe, n_heads, scale, scratch, m, l, o);
}

void mla_attn_partial_bf16(const MlaCacheView& kv, const int32_t* pos, int64_t i_begin,
                           int64_t i_end, const float* q_lat, const float* q_pe, int32_t n_heads,
                           float scale, float* scratch, float* m, float* l, float* o) {
  // An AVX-512 CPU without AVX512-BF16 dispatches to the AVX3 target too: refuse, not SIGILL.
  DSS_CHECK(cpu_has_bf16_dot(), "mla_attn_partial_bf16 on a CPU without AVX512-BF16");
  HWY_DYNAMIC_DISPATCH(MlaAttnPartialBf16)
  (kv, pos, i_begin, i_end, q_lat, q_pe, n_heads, scale, scratch, m, l, o);
}

void mla_attn_merge(int32_t n_parts, const float* m, const float* l, const float* o,
                    int32_t n_heads, int32_t d_latent, float* out) {
  HWY_DYNAMIC_DISPATCH(MlaAttnMerge)(n_parts, m, l, o, n_heads, d_latent, out);
}

void mla_load_rows(const MlaCacheView& kv, const int32_t* pos, int64_t i_begin, int64_t n,
                   float* latent, float* rope) {
  HWY_DYNAMIC_DISPATCH(MlaLoadRows)(kv, pos, i_begin, n, latent, rope, 0);
}

}  // namespace dss::cpu
#endif  // HWY_ONCE
