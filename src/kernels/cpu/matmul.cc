// Dispatch entry for kernels/cpu/matmul.h; the body is matmul-inl.h, compiled per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/matmul-inl.h"

#if HWY_ONCE
#include "base/check.h"
#include "kernels/cpu/matmul.h"

namespace dss::cpu {

HWY_EXPORT(MatmulRows);

void matmul_rows(const Matrix& w, const float* x, int64_t n_tok, float* y, int64_t r_begin,
                 int64_t r_end) {
  DSS_DCHECK(r_begin >= 0 && r_end <= w.n_rows && r_begin <= r_end);
  HWY_DYNAMIC_DISPATCH(MatmulRows)(w, x, n_tok, y, r_begin, r_end);
}

void matmul(const Matrix& w, const float* x, int64_t n_tok, float* y) {
  matmul_rows(w, x, n_tok, y, 0, w.n_rows);
}

}  // namespace dss::cpu
#endif  // HWY_ONCE
