// cpu::describe_cpu (kernels/cpu/cpu_features.h) against Linux's /proc/cpuinfo, an independent
// reading of the same CPUID leaves by the kernel at boot: vendor, display family and model (the
// extended fields added as the kernel does), stepping and the brand string ("model name").
#include "kernels/cpu/cpu_features.h"

#include <gtest/gtest.h>

#include <cstdio>
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
  } else {
    EXPECT_EQ(d.brand, info.at("model name"));
  }
  EXPECT_GT(d.family, 0);
}

}  // namespace
}  // namespace dss::cpu
