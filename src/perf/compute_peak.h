// Arithmetic peaks of this machine, the denominators of a compute-bound speed claim (issue #7):
// what register-resident independent chains reach, no memory traffic. Shared by
// bench/micro/roofline_bench and `dsserve bench-model` (prefill as a fraction of the peak of the
// arithmetic it runs). Fresh threads at once, FLOPs / wall time of the slowest, best of `reps`
// (noisy VMs); the best Highway target this CPU supports.
#pragma once

#include <cstdint>

namespace dss::perf {

// f32 FMA (GFLOP/s, 2 per lane per FMA): 12 independent MulAdd chains per thread.
double measure_fma_gflops(int32_t n_threads, int32_t reps = 3);

// bf16 pairs multiplied and accumulated into f32 (GFLOP/s, 2 per product): vdpbf16ps where the
// CPU has AVX512-BF16 (kernels/cpu/hwy_util-inl.h DotBf16Pairs, what MatmulArith::kBf16Dot
// runs), else Highway's ReorderWidenMulAccumulate (widen + FMA).
double measure_bf16_dot_gflops(int32_t n_threads, int32_t reps = 3);

}  // namespace dss::perf
