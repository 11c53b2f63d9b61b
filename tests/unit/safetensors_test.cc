// safetensors reader/writer: round trip, the official golden shards, and malformed headers.
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/checkpoint.h"
#include "io/safetensors_writer.h"

namespace dss {
namespace {

namespace fs = std::filesystem;

std::string tmp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("dss_st_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

void write_raw(const std::string& path, const std::string& header, size_t data_bytes) {
  std::ofstream f(path, std::ios::binary);
  const uint64_t n = header.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << header;
  f << std::string(data_bytes, '\0');
}

TEST(Safetensors, RoundTrip) {
  const std::string p = tmp_path("rt.safetensors");
  std::vector<uint8_t> a(2 * 3 * 4), b(5 * 2);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(100 + i);
  ASSERT_TRUE(
      write_safetensors(p, {{"w", DType::kF32, {2, 3}, &a}, {"v", DType::kBF16, {5}, &b}}).is_ok());
  auto st = SafetensorsFile::open(p);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(st->names(), (std::vector<std::string>{"w", "v"}));  // F32 before BF16
  auto w = st->get("w");
  ASSERT_TRUE(w.is_ok());
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(0, std::memcmp(w->data, a.data(), a.size()));
  EXPECT_EQ(st->metadata().at("format"), "pt");
  EXPECT_FALSE(st->get("nope").is_ok());
  fs::remove(p);
}

TEST(Safetensors, ReadsGoldenShardsThroughIndex) {
  auto ck = Checkpoint::open(std::string(DSS_TEST_DATA) + "/golden/tiny-v3");
  ASSERT_TRUE(ck.is_ok()) << ck.message();
  EXPECT_EQ(ck->files().size(), 2u);
  auto t = ck->get("model.layers.0.self_attn.kv_a_proj_with_mqa.weight");
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(t->dtype, DType::kF8E4M3);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{80, 256}));
  auto s = ck->get("model.layers.0.self_attn.kv_a_proj_with_mqa.weight_scale_inv");
  EXPECT_EQ(s->shape, (std::vector<int64_t>{1, 2}));  // ragged edge block
}

struct BadHeader {
  const char* name;
  std::string header;
  size_t data;
  const char* expect;
};

TEST(Safetensors, RejectsMalformedHeadersWithNamedTensor) {
  const std::vector<BadHeader> cases = {
      {"not_json", "{oops", 0, "corrupt header"},
      {"bad_dtype", R"({"t":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}})", 2,
       "tensor 't': unsupported dtype"},
      {"size_mismatch", R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4,
       "tensor 't': byte range"},
      {"past_end", R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4,
       "tensor 't': data ends"},
      {"no_offsets", R"({"t":{"dtype":"F32","shape":[2]}})", 8,
       "tensor 't': missing or malformed data_offsets"},
      {"neg_shape", R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8,
       "tensor 't': shape"},
      {"overlap",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       12, "overlaps"},
  };
  for (const auto& c : cases) {
    const std::string p = tmp_path(c.name);
    write_raw(p, c.header, c.data);
    auto st = SafetensorsFile::open(p);
    ASSERT_FALSE(st.is_ok()) << c.name;
    EXPECT_NE(st.message().find(p), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << c.name << ": " << st.message();
    fs::remove(p);
  }
  auto missing = SafetensorsFile::open(tmp_path("does_not_exist"));
  EXPECT_FALSE(missing.is_ok());
  EXPECT_NE(missing.message().find("No such file"), std::string::npos);
}

}  // namespace
}  // namespace dss
