// cpu::describe_cpu (kernels/cpu/cpu_features.h) against Linux's /proc/cpuinfo, an independent
// reading of the same CPUID leaves by the kernel at boot: vendor, display family and model (the
// extended fields added as the kernel does), stepping and the brand string ("model name"; where
// the hypervisor changed it since boot, against this test's own CPUID read).
#include "kernels/cpu/cpu_features.h"

#include <gtest/gtest.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

namespace dss::cpu {
namespace {

// The first processor's "key : value" lines, values with surrounding blanks removed.
std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  const size_t b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

std::map<std::string, std::string> first_cpuinfo_block() {
  std::map<std::string, std::string> kv;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) {
      if (!kv.empty()) break;
      continue;
    }
    const size_t colon = line.find(':');
    if (colon != std::string::npos) kv[trim(line.substr(0, colon))] = trim(line.substr(colon + 1));
  }
  return kv;
}

// The brand string straight from CPUID leaves 0x80000002-0x80000004 (48 bytes, NUL-padded),
// trimmed of surrounding spaces; "" where the leaves are absent.
std::string cpuid_brand() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, dx = 0;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &dx) == 0 || a < 0x80000004u) return "";
  char text[49] = {};
  for (unsigned leaf = 0; leaf < 3; ++leaf) {
    __get_cpuid(0x80000002u + leaf, &a, &b, &c, &dx);
    const unsigned regs[4] = {a, b, c, dx};
    std::memcpy(text + 16 * leaf, regs, 16);
  }
  return trim(text);
#else
  return "";
#endif
}

TEST(CpuFeatures, DescriptionMatchesProcCpuinfo) {
  const CpuDescription& d = describe_cpu();
  EXPECT_EQ(&d, &describe_cpu());  // computed once
  EXPECT_FALSE(d.target.empty());
  EXPECT_EQ(d.bf16_dot, cpu_has_bf16_dot());
  const auto info = first_cpuinfo_block();
  if (!info.count("vendor_id") || !info.count("cpu family") || !info.count("model") ||
      !info.count("stepping") || !info.count("model name")) {
    GTEST_SKIP() << "no x86 /proc/cpuinfo here";
  }
  EXPECT_EQ(trim(d.vendor), info.at("vendor_id"));  // e.g. "  Shanghai  " is padded
  EXPECT_EQ(d.family, std::stoi(info.at("cpu family")));
  EXPECT_EQ(d.model, std::stoi(info.at("model")));
  EXPECT_EQ(d.stepping, std::stoi(info.at("stepping")));
  if (d.brand.empty()) {  // Linux names a CPU without a brand string by family / model
    char fallback[16];
    std::snprintf(fallback, sizeof(fallback), "%02x/%02x", d.family, d.model);
    EXPECT_EQ(fallback, info.at("model name"));
  } else if (d.brand != info.at("model name")) {
    // Linux reads the brand string once at boot; a hypervisor may present another one to
    // CPUID later (seen: "AMD EPYC" in /proc/cpuinfo, "Oxide Virtual Turin-like Processor" from
    // CPUID on a Zen 5 VM). Then the reference is this test's own read of CPUID 0x80000002-4.
    EXPECT_EQ(d.brand, cpuid_brand()) << "/proc/cpuinfo says '" << info.at("model name") << "'";
  }
  EXPECT_GT(d.family, 0);
}

}  // namespace
}  // namespace dss::cpu
