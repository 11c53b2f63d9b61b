// finish_after_token: each row's expectation follows from the rules in finish.h.
#include "sample/finish.h"

#include <gtest/gtest.h>

#include <string>

namespace dss {
namespace {

constexpr TokenId kEos = 1;

TEST(Finish, EosStopIdsAndLength) {
  SamplingParams p;
  p.max_tokens = 5;
  p.stop_token_ids = {7, 9};
  EXPECT_EQ(finish_after_token(p, kEos, 4, 1), FinishReason::kNone);
  EXPECT_EQ(finish_after_token(p, kEos, kEos, 1), FinishReason::kStop);
  EXPECT_EQ(finish_after_token(p, kEos, 9, 2), FinishReason::kStop);
  EXPECT_EQ(finish_after_token(p, kEos, 4, 5), FinishReason::kLength);
  EXPECT_EQ(finish_after_token(p, kEos, kEos, 5), FinishReason::kStop);  // stop wins over length
  EXPECT_EQ(finish_after_token(p, -1, kEos, 1), FinishReason::kNone);    // no EOS id known
}

TEST(Finish, IgnoreEosAndMinTokens) {
  SamplingParams p;
  p.max_tokens = 10;
  p.ignore_eos = true;
  p.stop_token_ids = {7};
  EXPECT_EQ(finish_after_token(p, kEos, kEos, 3), FinishReason::kNone);
  EXPECT_EQ(finish_after_token(p, kEos, 7, 3), FinishReason::kStop);  // stop ids still apply
  p.ignore_eos = false;
  p.min_tokens = 3;
  EXPECT_EQ(finish_after_token(p, kEos, kEos, 2), FinishReason::kNone);  // 2 < min_tokens
  EXPECT_EQ(finish_after_token(p, kEos, 7, 2), FinishReason::kNone);
  EXPECT_EQ(finish_after_token(p, kEos, kEos, 3), FinishReason::kStop);
  p.max_tokens = 2;  // length is never held back by min_tokens
  EXPECT_EQ(finish_after_token(p, kEos, 4, 2), FinishReason::kLength);
}

TEST(Finish, Names) {
  EXPECT_EQ(std::string(finish_reason_name(FinishReason::kStop)), "stop");
  EXPECT_EQ(std::string(finish_reason_name(FinishReason::kLength)), "length");
  EXPECT_EQ(std::string(finish_reason_name(FinishReason::kNone)), "none");
  EXPECT_EQ(std::string(finish_reason_name(FinishReason::kAbort)), "abort");
}

}  // namespace
}  // namespace dss
