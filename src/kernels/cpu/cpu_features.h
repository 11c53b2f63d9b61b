// CPU features the Highway targets do not cover (Highway 1.0.3 picks AVX3 without asking for
// AVX512-BF16; see kernels/cpu/hwy_util-inl.h DotBf16Pairs).
#pragma once

namespace dss::cpu {

// Whether vdpbf16ps may run here: the CPU reports AVX512-BF16 and Highway dispatches to an AVX3
// target (the only ones with the bf16-dot kernels), i.e. MatmulArith::kBf16Dot is usable.
// Fixed at the first call (CPUID is slow under a VM): later hwy::DisableTargets or
// SetSupportedTargetsForTest calls do not change it.
bool cpu_has_bf16_dot();

}  // namespace dss::cpu
