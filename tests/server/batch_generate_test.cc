// Offline batch generation (server/batch_generate.h) on the official-format tiny-v3 golden
// checkpoint: the golden prompts, submitted together as JSONL lines, give DeepSeek's reference
// greedy continuations in input order; lines are parsed by the server's sampling reader (its
// errors name the field); a request the engine refuses reports its error in its own slot while
// the others run; prompt text goes through the encoder.
#include "server/batch_generate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/json.h"

namespace dss {
namespace {

const std::string kModel = std::string(DSS_TEST_DATA) + "/golden/tiny-v3";

EngineOptions options() {
  EngineOptions o;
  o.model_dir = kModel;
  o.page_size = 16;
  o.max_running_requests = 8;
  o.chunked_prefill_size = 64;
  o.context_length = 512;
  o.kv_cache_memory_bytes = 32 << 20;
  o.matmul_dtype = MatmulDType::kF32;  // the reference's float32 arithmetic
  return o;
}

const PromptEncoder kNoTokenizer = [](const std::string&) -> Result<std::vector<TokenId>> {
  return Status::error("no tokenizer");
};

TEST(BatchGenerate, GoldenPromptsGiveReferenceGreedyInInputOrder) {
  auto golden = load_json_file(kModel + "/golden.json");
  ASSERT_TRUE(golden.is_ok());
  SamplingParams defaults;
  defaults.temperature = 0.0f;
  defaults.ignore_eos = true;
  std::vector<BatchRequest> requests;
  std::vector<std::vector<TokenId>> want;
  for (const Json& c : (*golden)["cases"]) {
    want.push_back(c["greedy"]["tokens"].get<std::vector<TokenId>>());
    Json line = {{"prompt_ids", c["prompt"]}, {"max_tokens", want.back().size()}};
    auto r = parse_batch_request(line.dump(), defaults, kNoTokenizer);
    ASSERT_TRUE(r.is_ok()) << r.message();
    requests.push_back(*r);
  }
  ASSERT_GE(requests.size(), 2u);
  // A prompt longer than the context: refused by the engine, in its own slot.
  requests.push_back(BatchRequest{std::vector<TokenId>(600, 5), defaults});
  auto engine = Engine::create(options());
  ASSERT_TRUE(engine.is_ok()) << engine.message();
  const std::vector<BatchResult> results = run_batch(**engine, nullptr, requests);
  ASSERT_EQ(results.size(), requests.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(results[i].error, "") << i;
    EXPECT_EQ(results[i].output_ids, want[i]) << i;
    EXPECT_EQ(results[i].finish_reason, "length") << i;
    EXPECT_GE(results[i].e2e_s, results[i].ttft_s);
    const OrderedJson j = batch_result_json(i, requests[i], results[i], false);
    EXPECT_EQ(j["index"], i);
    EXPECT_EQ(j["output_ids"].get<std::vector<TokenId>>(), want[i]);
    EXPECT_FALSE(j.contains("text"));
  }
  const BatchResult& refused = results.back();
  EXPECT_NE(refused.error.find("context"), std::string::npos) << refused.error;
  const OrderedJson j = batch_result_json(want.size(), requests.back(), refused, false);
  EXPECT_TRUE(j.contains("error"));
  EXPECT_FALSE(j.contains("output_ids"));
}

TEST(BatchGenerate, LinesAreReadByTheServersSamplingReader) {
  SamplingParams d;
  d.max_tokens = 64;
  auto r = parse_batch_request(R"({"prompt_ids": [1, 2], "temperature": 0.5, "stop": ["x"]})", d,
                               kNoTokenizer);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r->prompt, (std::vector<TokenId>{1, 2}));
  EXPECT_FLOAT_EQ(r->params.temperature, 0.5f);
  EXPECT_EQ(r->params.max_tokens, 64);  // the default where the line says nothing
  EXPECT_EQ(r->params.stop, (std::vector<std::string>{"x"}));
  auto bad = parse_batch_request(R"({"prompt_ids": [1], "temperature": "hot"})", d, kNoTokenizer);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("temperature"), std::string::npos) << bad.message();
  auto wide = parse_batch_request(R"({"prompt_ids": [4294967296]})", d, kNoTokenizer);
  ASSERT_FALSE(wide.is_ok());
  EXPECT_NE(wide.message().find("prompt_ids"), std::string::npos);
  EXPECT_FALSE(parse_batch_request("[1, 2]", d, kNoTokenizer).is_ok());
  EXPECT_FALSE(parse_batch_request(R"({"max_tokens": 3})", d, kNoTokenizer).is_ok());
  auto text = parse_batch_request(R"({"prompt": "hi"})", d, kNoTokenizer);
  ASSERT_FALSE(text.is_ok());
  EXPECT_EQ(text.message(), "prompt: no tokenizer");
  const PromptEncoder lengths = [](const std::string& s) -> Result<std::vector<TokenId>> {
    return std::vector<TokenId>{static_cast<TokenId>(s.size())};
  };
  auto encoded = parse_batch_request(R"({"prompt": "hello"})", d, lengths);
  ASSERT_TRUE(encoded.is_ok());
  EXPECT_EQ(encoded->prompt, (std::vector<TokenId>{5}));
}

}  // namespace
}  // namespace dss
