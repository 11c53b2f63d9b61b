#include "kernels/cpu/cpu_features.h"

#include <cstdint>

#include "hwy/targets.h"

namespace dss::cpu {

bool cpu_has_bf16_dot() {
  // Computed once: hwy::SupportedTargets() runs CPUID on every call, which a VM traps (~25 us
  // each on the dev VM); called per attention part, it cost batch-1 decode ~25 us per layer.
  static const bool has = [] {
    // HWY_DYNAMIC_DISPATCH runs the best compiled target the CPU supports: the lowest set bit.
    const int64_t usable = hwy::SupportedTargets() & HWY_TARGETS;
    const int64_t best = usable & -usable;
    return (best & (HWY_AVX3 | HWY_AVX3_DL)) != 0 && __builtin_cpu_supports("avx512bf16");
  }();
  return has;
}

}  // namespace dss::cpu
