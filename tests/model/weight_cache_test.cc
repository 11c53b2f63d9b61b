// --weight-cache: the first load writes the placed arena to a file, a second load of the same
// checkpoint with the same placement maps it (no repack) and computes bit-identical logits;
// another placement (the other matmul arithmetic) gets its own file.
#include <gtest/gtest.h>

#include <filesystem>

#include "model/runtime/model.h"
#include "model/runtime/sequence_runner.h"

namespace dss {
namespace {

namespace fs = std::filesystem;

std::vector<float> last_logits(const Model& m, const std::vector<TokenId>& ids) {
  SequenceRunner r(m, static_cast<int32_t>(ids.size()), 64, 512);
  std::vector<float> out;
  r.prefill(ids, false,
            [&](int32_t, int32_t, const float* lg) { out.assign(lg, lg + m.config().n_vocab); });
  return out;
}

size_t n_files(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ".weights";
  return n;
}

TEST(WeightCache, SecondLoadMapsTheFileAndComputesTheSameLogits) {
  const fs::path dir =
      fs::temp_directory_path() / ("dss-weight-cache-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  LoadOptions o{std::string(DSS_TEST_DATA) + "/golden/tiny-v32"};
  o.matmul_dtype = MatmulDType::kF32;
  o.weight_cache_dir = dir.string();
  const std::vector<TokenId> ids = {1, 5, 9, 200, 31, 7, 64, 3, 1000, 17};
  auto first = Model::load(o);
  ASSERT_TRUE(first.is_ok()) << first.message();
  EXPECT_FALSE((*first)->weights().arena_from_cache);
  ASSERT_EQ(n_files(dir), 1u);
  auto second = Model::load(o);
  ASSERT_TRUE(second.is_ok()) << second.message();
  EXPECT_TRUE((*second)->weights().arena_from_cache);
  EXPECT_EQ(last_logits(**first, ids), last_logits(**second, ids));
  LoadOptions plain = o;
  plain.weight_cache_dir.clear();
  auto uncached = Model::load(plain);
  ASSERT_TRUE(uncached.is_ok());
  EXPECT_EQ(last_logits(**uncached, ids), last_logits(**second, ids));
  if (CpuBackend::cpu_has_bf16_dot()) {  // another layout and arithmetic: another file
    o.matmul_dtype = MatmulDType::kBf16;
    auto bf16 = Model::load(o);
    ASSERT_TRUE(bf16.is_ok());
    EXPECT_FALSE((*bf16)->weights().arena_from_cache);
    EXPECT_EQ(n_files(dir), 2u);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dss
