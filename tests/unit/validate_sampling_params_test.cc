// validate_sampling_params: defaults pass; each out-of-range field fails with its name.
#include "core/validate_sampling_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace dss {
namespace {

TEST(ValidateParams, DefaultsAndEdgesAreValid) {
  SamplingParams p;
  EXPECT_TRUE(validate_sampling_params(p, 100).is_ok());
  p.temperature = 0.0f;
  p.top_p = 1.0f;
  p.top_k = -1;
  p.min_p = 1.0f;
  p.logprobs = kMaxLogprobs;
  p.min_tokens = p.max_tokens;
  p.stop_token_ids = {0, 99};
  EXPECT_TRUE(validate_sampling_params(p, 100).is_ok());
}

TEST(ValidateParams, EachBadFieldIsNamed) {
  const std::vector<std::pair<std::string, std::function<void(SamplingParams&)>>> cases = {
      {"temperature", [](SamplingParams& p) { p.temperature = -0.1f; }},
      {"temperature", [](SamplingParams& p) { p.temperature = std::nanf(""); }},
      {"top_p", [](SamplingParams& p) { p.top_p = 0.0f; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 1.5f; }},
      {"top_k", [](SamplingParams& p) { p.top_k = -2; }},
      {"min_p", [](SamplingParams& p) { p.min_p = 1.1f; }},
      {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = 0.0f; }},
      {"frequency_penalty", [](SamplingParams& p) { p.frequency_penalty = 2.5f; }},
      {"presence_penalty", [](SamplingParams& p) { p.presence_penalty = -3.0f; }},
      {"max_tokens", [](SamplingParams& p) { p.max_tokens = 0; }},
      {"min_tokens", [](SamplingParams& p) { p.min_tokens = p.max_tokens + 1; }},
      {"logprobs", [](SamplingParams& p) { p.logprobs = kMaxLogprobs + 1; }},
      {"stop_token_ids", [](SamplingParams& p) { p.stop_token_ids = {100}; }},
      {"stop", [](SamplingParams& p) { p.stop = {""}; }},
  };
  for (const auto& [field, spoil] : cases) {
    SamplingParams p;
    spoil(p);
    const Status s = validate_sampling_params(p, 100);
    ASSERT_FALSE(s.is_ok()) << field;
    EXPECT_EQ(s.message().rfind(field, 0), 0u) << s.message();
  }
}

}  // namespace
}  // namespace dss
