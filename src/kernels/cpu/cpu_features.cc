#include "kernels/cpu/cpu_features.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "hwy/targets.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace dss::cpu {
namespace {

// The best compiled target the CPU supports, which HWY_DYNAMIC_DISPATCH runs: the lowest set bit.
// Read once, so cpu_has_bf16_dot() and describe_cpu() see the same one.
int64_t dispatched_target() {
  static const int64_t best = [] {
    const int64_t usable = hwy::SupportedTargets() & HWY_TARGETS;
    return usable & -usable;
  }();
  return best;
}

CpuDescription read_cpu() {
  CpuDescription d;
  d.target = hwy::TargetName(dispatched_target());
  d.bf16_dot = cpu_has_bf16_dot();
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, e = 0;
  if (__get_cpuid(0, &a, &b, &c, &e) == 0) return d;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);  // the vendor string is EBX, EDX, ECX
  std::memcpy(vendor + 4, &e, 4);
  std::memcpy(vendor + 8, &c, 4);
  d.vendor = vendor;
  if (a >= 1 && __get_cpuid(1, &a, &b, &c, &e) != 0) {
    const int base_family = static_cast<int>((a >> 8) & 0xF);
    const int base_model = static_cast<int>((a >> 4) & 0xF);
    d.stepping = static_cast<int>(a & 0xF);
    d.family = base_family == 0xF ? base_family + static_cast<int>((a >> 20) & 0xFF) : base_family;
    d.model = d.family >= 6 ? (static_cast<int>((a >> 16) & 0xF) << 4) + base_model : base_model;
  }
  unsigned max_ext = 0;
  if (__get_cpuid(0x80000000u, &max_ext, &b, &c, &e) != 0 && max_ext >= 0x80000004u) {
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      unsigned r[4] = {};
      __get_cpuid(0x80000002u + leaf, &r[0], &r[1], &r[2], &r[3]);
      std::memcpy(brand + 16 * leaf, r, 16);
    }
    std::string s = brand;
    const size_t first = s.find_first_not_of(' ');
    const size_t last = s.find_last_not_of(' ');
    d.brand = first == std::string::npos ? "" : s.substr(first, last - first + 1);
  }
#endif
  return d;
}

}  // namespace

bool cpu_has_bf16_dot() {
  // Computed once: hwy::SupportedTargets() runs CPUID on every call, which a VM traps (~25 us
  // each on the dev VM); called per attention part, it cost batch-1 decode ~25 us per layer.
  static const bool has = [] {
    return (dispatched_target() & (HWY_AVX3 | HWY_AVX3_DL)) != 0 &&
           __builtin_cpu_supports("avx512bf16");
  }();
  return has;
}

const CpuDescription& describe_cpu() {
  static const CpuDescription d = read_cpu();
  return d;
}

}  // namespace dss::cpu
