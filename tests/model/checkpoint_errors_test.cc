// A bad checkpoint fails at load with a message naming the file and the tensor - never a crash,
// never garbage. Each test starts from a freshly generated random checkpoint (one shard + index)
// and breaks one thing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/json.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "model/deepseek/random_checkpoint.h"
#include "model/runtime/model.h"
#include "model/runtime/sequence_runner.h"

namespace dss {
namespace {

namespace fs = std::filesystem;

const char* kShard = "model-00001-of-000001.safetensors";
const char* kQb = "model.layers.1.self_attn.q_b_proj.weight";

class BadCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dss_badck_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    auto cfg = preset_config("tiny");
    ASSERT_TRUE(cfg.is_ok());
    (*cfg)["vocab_size"] = 512;
    (*cfg)["num_hidden_layers"] = 2;
    RandomCheckpointOptions o;
    o.out_dir = dir_.string();
    o.seed = 1;
    o.shard_bytes = size_t{1} << 40;  // one shard
    ASSERT_TRUE(write_random_checkpoint(*cfg, o).is_ok());
    ASSERT_TRUE(Model::load(LoadOptions{dir_.string()}).is_ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string shard() const { return (dir_ / kShard).string(); }

  // Rewrites the shard through `edit`, which may drop or change entries.
  void rewrite(const std::function<void(std::vector<SafetensorsEntry>&,
                                        std::vector<std::vector<uint8_t>>&)>& edit) {
    auto st = SafetensorsFile::open(shard());
    ASSERT_TRUE(st.is_ok());
    std::vector<std::vector<uint8_t>> bytes;
    std::vector<SafetensorsEntry> entries;
    bytes.reserve(st->names().size() + 8);  // edits may append; pointers must stay valid
    for (const auto& n : st->names()) {
      auto t = st->get(n);
      bytes.emplace_back(t->data, t->data + t->n_bytes);
    }
    size_t i = 0;
    for (const auto& n : st->names()) {
      auto t = st->get(n);
      entries.push_back({n, t->dtype, t->shape, &bytes[i++]});
    }
    edit(entries, bytes);
    const std::string tmp = shard() + ".new";
    ASSERT_TRUE(write_safetensors(tmp, entries).is_ok());
    st = Status::error("closed");  // unmap before replacing
    fs::rename(tmp, shard());
  }

  void drop_from_index(const std::string& name) {
    const auto path = (dir_ / "model.safetensors.index.json").string();
    auto j = load_json_file(path);
    ASSERT_TRUE(j.is_ok());
    (*j)["weight_map"].erase(name);
    std::ofstream(path) << j->dump();
  }

  std::string load_error() {
    auto m = Model::load(LoadOptions{dir_.string()});
    EXPECT_FALSE(m.is_ok());
    return m.is_ok() ? std::string() : m.message();
  }

  fs::path dir_;
};

TEST_F(BadCheckpoint, MissingTensor) {
  rewrite([](auto& e, auto&) {
    std::erase_if(e, [](const SafetensorsEntry& x) { return x.name == kQb; });
  });
  drop_from_index(kQb);
  const std::string err = load_error();
  EXPECT_NE(err.find(kQb), std::string::npos) << err;
  EXPECT_NE(err.find("missing"), std::string::npos) << err;
}

TEST_F(BadCheckpoint, IndexNamesTensorAbsentFromFile) {
  rewrite([](auto& e, auto&) {
    std::erase_if(e, [](const SafetensorsEntry& x) { return x.name == kQb; });
  });
  const std::string err = load_error();
  EXPECT_NE(err.find(kQb), std::string::npos) << err;
  EXPECT_NE(err.find(kShard), std::string::npos) << err;
}

TEST_F(BadCheckpoint, WrongShape) {
  rewrite([](auto& e, auto&) {
    for (auto& x : e) {
      if (x.name == kQb) std::swap(x.shape[0], x.shape[1]);
    }
  });
  const std::string err = load_error();
  EXPECT_NE(err.find(kQb), std::string::npos) << err;
  EXPECT_NE(err.find("shape"), std::string::npos) << err;
  EXPECT_NE(err.find(kShard), std::string::npos) << err;
}

TEST_F(BadCheckpoint, WrongDtype) {
  rewrite([](auto& e, auto&) {
    for (auto& x : e) {
      if (x.name == kQb) x.dtype = DType::kI8;
    }
  });
  const std::string err = load_error();
  EXPECT_NE(err.find(kQb), std::string::npos) << err;
  EXPECT_NE(err.find("I8"), std::string::npos) << err;
}

TEST_F(BadCheckpoint, MissingScale) {
  const std::string scale = std::string(kQb) + "_scale_inv";
  rewrite([&](auto& e, auto&) {
    std::erase_if(e, [&](const SafetensorsEntry& x) { return x.name == scale; });
  });
  drop_from_index(scale);
  const std::string err = load_error();
  EXPECT_NE(err.find(scale), std::string::npos) << err;
}

TEST_F(BadCheckpoint, WrongScaleShape) {
  const std::string scale = std::string(kQb) + "_scale_inv";
  rewrite([&](auto& e, auto& bytes) {
    for (auto& x : e) {
      if (x.name == scale) {
        bytes.emplace_back(4, 0);  // a rank-1 scale instead of [ceil(rows/128), ceil(cols/128)]
        x.shape = {1};
        x.bytes = &bytes.back();
      }
    }
  });
  const std::string err = load_error();
  EXPECT_NE(err.find(scale), std::string::npos) << err;
  EXPECT_NE(err.find("shape"), std::string::npos) << err;
}

TEST_F(BadCheckpoint, TruncatedData) {
  fs::resize_file(shard(), fs::file_size(shard()) - 100);
  const std::string err = load_error();
  EXPECT_NE(err.find(kShard), std::string::npos) << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  EXPECT_NE(err.find("tensor '"), std::string::npos) << err;
}

TEST_F(BadCheckpoint, CorruptHeader) {
  std::fstream f(shard(), std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(8);
  f.write("\x01\xffgarbage", 9);  // not JSON at all
  f.close();
  const std::string err = load_error();
  EXPECT_NE(err.find(kShard), std::string::npos) << err;
  EXPECT_NE(err.find("corrupt header"), std::string::npos) << err;
}

TEST_F(BadCheckpoint, HeaderLengthBeyondFile) {
  std::fstream f(shard(), std::ios::in | std::ios::out | std::ios::binary);
  const uint64_t huge = uint64_t{1} << 40;
  f.write(reinterpret_cast<const char*>(&huge), 8);
  f.close();
  const std::string err = load_error();
  EXPECT_NE(err.find(kShard), std::string::npos) << err;
  EXPECT_NE(err.find("header length"), std::string::npos) << err;
}

TEST_F(BadCheckpoint, MissingShardFile) {
  fs::remove(shard());
  const std::string err = load_error();
  EXPECT_NE(err.find(kShard), std::string::npos) << err;
}

TEST_F(BadCheckpoint, MissingConfigKey) {
  const auto path = (dir_ / "config.json").string();
  auto j = load_json_file(path);
  ASSERT_TRUE(j.is_ok());
  j->erase("kv_lora_rank");
  std::ofstream(path) << j->dump();
  const std::string err = load_error();
  EXPECT_NE(err.find("config.json"), std::string::npos) << err;
  EXPECT_NE(err.find("kv_lora_rank missing"), std::string::npos) << err;
}

TEST_F(BadCheckpoint, UnknownArchitecture) {
  const auto path = (dir_ / "config.json").string();
  auto j = load_json_file(path);
  ASSERT_TRUE(j.is_ok());
  (*j)["architectures"] = {"LlamaForCausalLM"};
  std::ofstream(path) << j->dump();
  const std::string err = load_error();
  EXPECT_NE(err.find("LlamaForCausalLM"), std::string::npos) << err;
}

TEST(RandomCheckpoint, SameSeedSameBytesAndItRuns) {
  auto cfg = preset_config("tiny");
  ASSERT_TRUE(cfg.is_ok());
  (*cfg)["vocab_size"] = 300;
  std::vector<std::string> dirs;
  for (int i = 0; i < 2; ++i) {
    const auto d = fs::temp_directory_path() /
                   ("dss_rand_" + std::to_string(::getpid()) + "_" + std::to_string(i));
    fs::remove_all(d);
    RandomCheckpointOptions o;
    o.out_dir = d.string();
    o.seed = 42;
    o.shard_bytes = 1 << 20;  // several shards
    ASSERT_TRUE(write_random_checkpoint(*cfg, o).is_ok());
    dirs.push_back(d.string());
  }
  auto read = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  int n_shards = 0;
  for (const auto& e : fs::directory_iterator(dirs[0])) {
    n_shards += e.path().extension() == ".safetensors";
    EXPECT_EQ(read(e.path()), read(fs::path(dirs[1]) / e.path().filename())) << e.path();
  }
  EXPECT_GT(n_shards, 1);
  auto m = Model::load(LoadOptions{dirs[0]});
  ASSERT_TRUE(m.is_ok()) << m.message();
  SequenceRunner r(**m, 16);
  r.prefill(std::vector<TokenId>{0, 5, 7}, false, nullptr);
  const float* lg = r.decode(9);
  for (int32_t i = 0; i < 300; ++i) ASSERT_TRUE(std::isfinite(lg[i]));
  for (const auto& d : dirs) fs::remove_all(d);
}

}  // namespace
}  // namespace dss
