// JSON Schema constraints on the real DeepSeek vocabulary, judged by an independent validator:
// for every schema of tests/data/grammar/schemas, seeded random walks of the matcher (a model
// that picks any allowed token) produce documents that ajv (draft 2020-12 + ajv-formats) must
// accept. Needs node and `npm ci` (scripts/setup); skipped without them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "grammar/grammar_compiler.h"
#include "grammar_test_util.h"
#include "io/json.h"

namespace dss::grammar {
namespace {

constexpr int kDocsPerSchema = 8;

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(JsonSchemaAjv, GeneratedDocumentsValidate) {
  const Tokenizer* tok = test::real_tokenizer();
  if (!tok) GTEST_SKIP() << "no tokenizer in third_party/tokenizer (run scripts/setup)";
  if (!std::filesystem::exists(DSS_SOURCE_DIR "/node_modules/ajv/dist/2020.js") ||
      !std::filesystem::exists(DSS_SOURCE_DIR "/node_modules/ajv-formats")) {
    GTEST_SKIP() << "ajv not installed (run scripts/setup)";
  }
  GrammarCompiler compiler(TokenVocab::from_tokenizer(*tok, test::kDeepSeekVocab));
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(DSS_TEST_DATA "/grammar/schemas")) {
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 60u);
  Json cases = Json::array();
  int n_docs = 0, n_ended = 0;
  for (const auto& f : files) {
    const std::string text = read_file(f);
    auto g = compiler.json_schema(text);
    ASSERT_TRUE(g.is_ok()) << f << ": " << g.message();
    Json c = {
        {"name", f.filename().string()}, {"schema", Json::parse(text)}, {"docs", Json::array()}};
    int ended = 0;
    for (int seed = 0; seed < kDocsPerSchema; ++seed) {
      GrammarMatcher m(*g);
      Rng rng(1000 + seed);
      test::WalkResult w = test::random_walk(m, rng);
      ++n_docs;
      if (!w.ended) continue;
      ++ended;
      ASSERT_TRUE(test::valid_utf8(w.text)) << f << ": " << w.text;
      c["docs"].push_back(w.text);
    }
    EXPECT_GE(ended, kDocsPerSchema / 2) << f << ": too few walks reached the end";
    n_ended += ended;
    cases.push_back(std::move(c));
  }
  const std::string path = testing::TempDir() + "/grammar_ajv_cases.json";
  std::ofstream(path) << cases.dump();
  std::string out;
  const int rc =
      test::run_command("node " DSS_SOURCE_DIR "/tests/grammar/ajv_check.js " + path, out);
  std::printf("%d walks, %d ended; %s", n_docs, n_ended, out.c_str());
  EXPECT_EQ(rc, 0) << out;
}

}  // namespace
}  // namespace dss::grammar
