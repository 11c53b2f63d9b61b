// Dispatch entry for kernels/cpu/act_quant.h; the body is act_quant-inl.h, compiled per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/act_quant.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/act_quant-inl.h"

#if HWY_ONCE
#include "kernels/cpu/act_quant.h"

namespace dss::cpu {

HWY_EXPORT(ActQuantFp8);

void act_quant_fp8(const float* x, int64_t n_tok, int64_t n_cols, bool ue8m0, float* y) {
  HWY_DYNAMIC_DISPATCH(ActQuantFp8)(x, n_tok, n_cols, ue8m0, y);
}

}  // namespace dss::cpu
#endif  // HWY_ONCE
