// Request schemas, error JSON and the Prometheus exposition: errors name the field, the
// exposition is well formed (the promtool check of a live scrape is in load_test.sh).
#include "server/schemas.h"

#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/metrics.h"

namespace dss {
namespace {

Result<CompletionRequest> chat(const std::string& body) {
  return parse_completion_request(Endpoint::kChat, OrderedJson::parse(body));
}

std::string field(const std::string& body, Endpoint ep = Endpoint::kChat) {
  auto r = parse_completion_request(ep, OrderedJson::parse(body));
  EXPECT_FALSE(r) << body;
  return r ? "" : field_of_message(r.message());
}

// parse_sampling_params (`dsserve generate`'s JSONL): the completions endpoint's fields over the
// caller's defaults; absent or null keeps them; errors start with the field.
TEST(Schemas, SamplingParamsOverDefaults) {
  SamplingParams p;
  p.max_tokens = 64;
  p.temperature = 0.5f;
  ASSERT_TRUE(parse_sampling_params(
      OrderedJson::parse(R"({"top_k":3,"temperature":null,"stop":"x","stop_token_ids":[5],
        "logprobs":2,"include_stop_str_in_output":true,"seed":9,"prompt":"ignored"})"),
      p));
  EXPECT_EQ(p.max_tokens, 64);
  EXPECT_EQ(p.temperature, 0.5f);
  EXPECT_EQ(p.top_k, 3);
  EXPECT_EQ(p.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(p.stop_token_ids, std::vector<TokenId>{5});
  EXPECT_EQ(p.logprobs, 2);
  EXPECT_TRUE(p.include_stop_str_in_output);
  EXPECT_EQ(p.seed, 9u);
  SamplingParams q;
  EXPECT_EQ(field_of_message(
                parse_sampling_params(OrderedJson::parse(R"({"max_tokens":0})"), q).message()),
            "max_tokens");
  EXPECT_EQ(field_of_message(
                parse_sampling_params(OrderedJson::parse(R"({"logprobs":true})"), q).message()),
            "logprobs");
  // A chat-only key: ignored, as /v1/completions ignores it.
  EXPECT_TRUE(parse_sampling_params(OrderedJson::parse(R"({"max_completion_tokens":"x"})"), q));
}

// Integers of 2^32 and above are rejected, never truncated into a valid id or count.
TEST(Schemas, LargeIntegersAreRejectedNotTruncated) {
  const Endpoint c = Endpoint::kCompletions;
  EXPECT_EQ(field(R"({"prompt":[1,4294967301]})", c), "prompt[1]");
  EXPECT_EQ(field(R"({"prompt":[[1],[2,18446744073709551615]]})", c), "prompt[1][1]");
  EXPECT_EQ(field(R"({"prompt":[-1]})", c), "prompt[0]");
  EXPECT_EQ(field(R"({"prompt":"x","stop_token_ids":[4294967296]})", c), "stop_token_ids[0]");
  EXPECT_EQ(field(R"({"prompt":"x","logprobs":4294967297})", c), "logprobs");
  EXPECT_EQ(field(R"({"prompt":"x","max_tokens":4294967312})", c), "max_tokens");
  EXPECT_EQ(field(R"({"prompt":"x","n":18446744073709551615})", c), "n");
  EXPECT_EQ(field(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":4294967298,
    "logprobs":true})"),
            "top_logprobs");
  auto ok = parse_completion_request(
      c, OrderedJson::parse(R"({"prompt":[2147483647],"stop_token_ids":[7]})"));
  ASSERT_TRUE(ok) << ok.message();
  EXPECT_EQ(ok->prompt_ids[0][0], 2147483647);
  EXPECT_EQ(ok->max_tokens_field, "max_tokens");
  auto mct = chat(R"({"messages":[{"role":"user","content":"x"}],"max_completion_tokens":3})");
  ASSERT_TRUE(mct);
  EXPECT_EQ(mct->max_tokens_field, "max_completion_tokens");
}

TEST(Schemas, ChatFields) {
  auto r = chat(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,
    "stream_options":{"include_usage":true},"n":2,"max_completion_tokens":7,"temperature":0.5,
    "top_p":0.9,"top_k":5,"min_p":0.1,"seed":3,"stop":["a","b"],"logprobs":true,
    "top_logprobs":2,"presence_penalty":0.5,"chat_template_kwargs":{"thinking":true}})");
  ASSERT_TRUE(r) << r.message();
  EXPECT_TRUE(r->stream && r->include_usage);
  EXPECT_EQ(r->n, 2);
  EXPECT_EQ(r->params.max_tokens, 7);
  EXPECT_TRUE(r->max_tokens_given);
  EXPECT_EQ(r->params.top_k, 5);
  EXPECT_EQ(*r->params.seed, 3u);
  EXPECT_EQ(r->params.stop.size(), 2u);
  EXPECT_EQ(r->params.logprobs, 2);
  EXPECT_EQ(r->chat.thinking, std::optional<bool>(true));
  EXPECT_EQ(r->tool_choice, "none");
}

TEST(Schemas, ErrorsNameTheField) {
  EXPECT_EQ(field(R"({"max_tokens":3})"), "messages");
  EXPECT_EQ(field(R"({"messages":[{"role":"user","content":"x"}],"n":0})"), "n");
  EXPECT_EQ(field(R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})"),
            "temperature");
  EXPECT_EQ(field(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})"), "max_tokens");
  EXPECT_EQ(field(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":3})"),
            "top_logprobs");
  EXPECT_EQ(field(R"({"messages":[{"role":"user","content":"x"}],"stream_options":{}})"),
            "stream_options");
  EXPECT_EQ(field(R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"required"})"),
            "tool_choice");
  EXPECT_EQ(field(R"({"messages":[{"role":"user","content":"x"}],"stop":[1]})"), "stop");
  EXPECT_EQ(field(R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function",
    "function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}})"),
            "tool_choice.function.name");
  EXPECT_EQ(field(R"({"prompt":[1,"x"]})", Endpoint::kCompletions), "prompt");
  EXPECT_EQ(field(R"({"prompt":"x","echo":true})", Endpoint::kCompletions), "echo");
  EXPECT_EQ(field(R"({"prompt":"x","logprobs":true})", Endpoint::kCompletions), "logprobs");
}

TEST(Schemas, CompletionPrompts) {
  auto one =
      parse_completion_request(Endpoint::kCompletions, OrderedJson::parse(R"({"prompt":"x"})"));
  ASSERT_TRUE(one);
  EXPECT_EQ(one->prompt_texts.size(), 1u);
  EXPECT_EQ(one->params.max_tokens, 16);  // OpenAI's completions default
  auto ids = parse_completion_request(Endpoint::kCompletions,
                                      OrderedJson::parse(R"({"prompt":[[1,2],[3]],"logprobs":1})"));
  ASSERT_TRUE(ids);
  EXPECT_EQ(ids->prompt_ids.size(), 2u);
  EXPECT_EQ(ids->params.logprobs, 1);
}

TEST(ApiError, OpenAiShape) {
  const Json j = Json::parse(ApiError::bad_request("top_p must be in (0, 1]", "top_p").to_json());
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "top_p");
  EXPECT_EQ(j["error"]["code"], 400);
  EXPECT_TRUE(Json::parse(ApiError{401, "no", "", ""}.to_json())["error"]["param"].is_null());
  EXPECT_EQ(field_of_message("messages[2].role: missing"), "messages[2].role");
  EXPECT_EQ(field_of_message("this model's maximum context length is 5"), "");
}

TEST(Metrics, ExpositionIsWellFormed) {
  Metrics m;
  m.record_request("length", 10, 5, 0.01, 0.02, 0.5);
  m.record_inter_token(0.003);
  m.record_http_status(200);
  EngineStats st;
  st.kv_pages_total = 10;
  st.kv_pages_used = 4;
  const std::string text = m.render(st, 1e9);
  EXPECT_NE(text.find("dsserve:kv_cache_usage_perc 0.40000000000000002\n"), std::string::npos);
  EXPECT_NE(text.find("dsserve:request_success_total{finished_reason=\"length\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("dsserve:time_to_first_token_seconds_bucket{le=\"+Inf\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("dsserve:inter_token_latency_seconds_count 1\n"), std::string::npos);
  // Every sample line belongs to a family declared with # TYPE before it.
  std::string family;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t eol = text.find('\n', pos);
    const std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.rfind("# TYPE ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
    } else if (line[0] != '#') {
      EXPECT_EQ(line.rfind(family, 0), 0u) << line;
    }
  }
}

}  // namespace
}  // namespace dss
