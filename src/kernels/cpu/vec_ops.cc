// Dispatch entries for kernels/cpu/vec_ops.h; bodies in vec_ops-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/vec_ops.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/vec_ops-inl.h"

#if HWY_ONCE
#include "kernels/cpu/vec_ops.h"

namespace dss::cpu {

HWY_EXPORT(Dot);
HWY_EXPORT(Axpy);
HWY_EXPORT(RmsNorm);
HWY_EXPORT(SiluMul);
HWY_EXPORT(Softmax);

float dot(const float* a, const float* b, int64_t n) { return HWY_DYNAMIC_DISPATCH(Dot)(a, b, n); }
void axpy(float a, const float* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(Axpy)(a, x, y, n); }
void rmsnorm(const float* x, const Vector& w, int64_t n, float eps, float* y) {
  HWY_DYNAMIC_DISPATCH(RmsNorm)(x, w, n, eps, y);
}
void silu_mul(const float* gate, const float* up, int64_t n, float* y) {
  HWY_DYNAMIC_DISPATCH(SiluMul)(gate, up, n, y);
}
void softmax(float* x, int64_t n) { HWY_DYNAMIC_DISPATCH(Softmax)(x, n); }

}  // namespace dss::cpu
#endif  // HWY_ONCE
