// CPU features the Highway targets do not cover (Highway 1.0.3 picks AVX3 without asking for
// AVX512-BF16; see kernels/cpu/hwy_util-inl.h DotBf16Pairs), and what the CPU is, for reports.
#pragma once

#include <string>

namespace dss::cpu {

// Whether vdpbf16ps may run here: the CPU reports AVX512-BF16 and Highway dispatches to an AVX3
// target (the only ones with the bf16-dot kernels), i.e. MatmulArith::kBf16Dot is usable.
// Fixed at the first call (CPUID is slow under a VM): later hwy::DisableTargets or
// SetSupportedTargetsForTest calls do not change it.
bool cpu_has_bf16_dot();

// What this CPU is, for benchmark reports (bench-model prints it and puts it in its JSON): kernel
// speed differs across microarchitectures that share a target (AVX-512 on Zen 4 runs 512-bit
// vectors on 256-bit datapaths, on Zen 5 at full width), and a VM's brand string may not say
// which one it is ("AMD EPYC"), its family and model do.
struct CpuDescription {
  std::string vendor;  // CPUID leaf 0's vendor string ("AuthenticAMD", "GenuineIntel"); "" off x86
  std::string brand;   // leaves 0x80000002-4, leading and trailing spaces removed; "" if absent
                       // (Linux's "model name" then reads "%02x/%02x", family / model)
  // Leaf 1's family, model and stepping as Linux's /proc/cpuinfo "cpu family", "model" and
  // "stepping" show them (x86_family / x86_model: the extended family added for base family 0xF,
  // the extended model for family 6 and up); 0 off x86.
  int family = 0, model = 0, stepping = 0;
  std::string target;     // hwy::TargetName of the target HWY_DYNAMIC_DISPATCH runs ("AVX3")
  bool bf16_dot = false;  // cpu_has_bf16_dot()
};
// Computed once (CPUID traps under a VM); the same object on every call.
const CpuDescription& describe_cpu();

}  // namespace dss::cpu
