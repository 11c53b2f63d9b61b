// Shared helpers for the text-layer tests: where the real tokenizer lives and how to read
// the committed JSONL test data.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/json.h"
#include "text/tokenizer.h"

namespace dss::test {

// third_party/tokenizer/deepseek-v3 (installed by scripts/setup), or the shared copy beside
// the checkout. Empty when neither exists.
inline std::string tokenizer_dir() {
  for (std::string d : {std::string(DSS_SOURCE_DIR) + "/third_party/tokenizer/deepseek-v3",
                        std::string(DSS_SOURCE_DIR) + "/../shared/tokenizer/deepseek-v3"}) {
    if (std::filesystem::exists(d + "/tokenizer.json")) return d;
  }
  return "";
}

// Loads the real tokenizer once per process (it takes ~1 s); aborts the test when missing.
inline const Tokenizer& real_tokenizer() {
  static const Tokenizer* tok = [] {
    std::string dir = tokenizer_dir();
    if (dir.empty()) return static_cast<Tokenizer*>(nullptr);
    Result<Tokenizer> t = Tokenizer::load_dir(dir);
    if (!t) {
      ADD_FAILURE() << t.message();
      return static_cast<Tokenizer*>(nullptr);
    }
    return new Tokenizer(std::move(t).value());
  }();
  if (tok == nullptr) {
    std::fprintf(stderr, "tokenizer files missing: run scripts/setup\n");
    std::abort();
  }
  return *tok;
}

inline std::vector<Json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<Json> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(Json::parse(line));
  }
  return out;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

inline std::string data_path(const std::string& name) {
  return std::string(DSS_TEST_DATA) + "/text/" + name;
}

}  // namespace dss::test
