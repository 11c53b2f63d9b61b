// --matmul-dtype auto's rule (choose_matmul_dtype: a pure function of the two measured rates and
// whether the CPU has the bf16 dot) and its cache (a line per CPU model and thread count under
// $XDG_CACHE_HOME/dsserve, read instead of measuring again).
#include "model/runtime/matmul_choice.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "backend/cpu/cpu_backend.h"

namespace dss {
namespace {

TEST(MatmulChoice, FasterRateWins) {
  // bf16 faster: bf16 (a Zen 4 / Zen 5 where vdpbf16ps doubles the FMA rate).
  EXPECT_EQ(choose_matmul_dtype(200.0, 450.0, true), MatmulDType::kBf16);
  // f32 faster: f32 (the Intel Xeon VM of issue #41: FMA 349, bf16 dot 173 GFLOP/s).
  EXPECT_EQ(choose_matmul_dtype(349.0, 173.0, true), MatmulDType::kF32);
  // A tie keeps the reference arithmetic.
  EXPECT_EQ(choose_matmul_dtype(300.0, 300.0, true), MatmulDType::kF32);
}

TEST(MatmulChoice, NoBf16DotMeansF32WhateverTheRates) {
  EXPECT_EQ(choose_matmul_dtype(200.0, 450.0, false), MatmulDType::kF32);
  EXPECT_EQ(choose_matmul_dtype(349.0, 173.0, false), MatmulDType::kF32);
  EXPECT_EQ(choose_matmul_dtype(0.0, 0.0, false), MatmulDType::kF32);
}

TEST(MatmulChoice, CachePathFollowsXdgThenHome) {
  const std::string old_xdg = getenv("XDG_CACHE_HOME") ? getenv("XDG_CACHE_HOME") : "";
  setenv("XDG_CACHE_HOME", "/x/cache", 1);
  EXPECT_EQ(matmul_cache_path(), "/x/cache/dsserve/matmul-dtype.tsv");
  setenv("XDG_CACHE_HOME", "", 1);
  if (getenv("HOME") != nullptr && *getenv("HOME") != '\0') {
    EXPECT_EQ(matmul_cache_path(),
              std::string(getenv("HOME")) + "/.cache/dsserve/matmul-dtype.tsv");
  }
  if (old_xdg.empty()) {
    unsetenv("XDG_CACHE_HOME");
  } else {
    setenv("XDG_CACHE_HOME", old_xdg.c_str(), 1);
  }
}

// A cached line for this CPU and thread count is used as it is (no measurement), in both orders
// of its two rates; DSSERVE_MATMUL_REMEASURE=1 measures instead and rewrites the line (when the
// measurement was stable).
TEST(MatmulChoice, CachedRatesDecideWithoutMeasuring) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dss_matmul_choice_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "dsserve");
  const std::string old_xdg = getenv("XDG_CACHE_HOME") ? getenv("XDG_CACHE_HOME") : "";
  setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  unsetenv("DSSERVE_MATMUL_REMEASURE");
  const CpuBackend be(CpuBackend::Options{2});
  const std::string path = (dir / "dsserve" / "matmul-dtype.tsv").string();
  for (const auto& [f32, bf16] : {std::pair{100.0, 400.0}, std::pair{400.0, 100.0}}) {
    {
      std::ofstream out(path, std::ios::trunc);
      out << "some other cpu\t2\t1\t2\n"
          << CpuBackend::cpu_model_key() << "\t" << be.n_threads() << "\t" << f32 << "\t" << bf16
          << "\n";
    }
    const MatmulChoice c = choose_matmul_dtype_auto(be);
    if (!CpuBackend::cpu_has_bf16_dot()) {
      EXPECT_EQ(c.source, "no-bf16");
      EXPECT_EQ(c.dtype, MatmulDType::kF32);
      continue;
    }
    EXPECT_EQ(c.source, "cache");
    EXPECT_EQ(c.f32_gflops, f32);
    EXPECT_EQ(c.bf16_gflops, bf16);
    EXPECT_EQ(c.dtype, bf16 > f32 ? MatmulDType::kBf16 : MatmulDType::kF32);
  }
  if (CpuBackend::cpu_has_bf16_dot()) {
    setenv("DSSERVE_MATMUL_REMEASURE", "1", 1);
    const MatmulChoice c = choose_matmul_dtype_auto(be);
    unsetenv("DSSERVE_MATMUL_REMEASURE");
    // "measured-unstable" where load from elsewhere made the probe's halves disagree: not cached.
    EXPECT_TRUE(c.source == "measured" || c.source == "measured-unstable") << c.source;
    EXPECT_GT(c.f32_gflops, 0.0);
    EXPECT_GT(c.bf16_gflops, 0.0);
    const MatmulChoice again = choose_matmul_dtype_auto(be);  // the line it wrote, if it did
    if (c.source == "measured") {
      EXPECT_EQ(again.source, "cache");
      EXPECT_EQ(again.dtype, c.dtype);
    }
    std::ifstream in(path);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(all.find("some other cpu\t2\t1\t2\n"), std::string::npos);  // others kept
  }
  if (old_xdg.empty()) {
    unsetenv("XDG_CACHE_HOME");
  } else {
    setenv("XDG_CACHE_HOME", old_xdg.c_str(), 1);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dss
