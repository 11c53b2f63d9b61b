// Penalties and the min_tokens mask on hand-built rows; expected values worked out in comments.
#include "sample/logits_processors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace dss {
namespace {

TEST(Penalties, RepetitionFrequencyPresenceInVllmOrder) {
  // Prompt {0, 1}; output 3, 3, 2. Logits [2, -1, 0.5, 3, -2].
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  const std::vector<TokenId> prompt = {0, 1, 1};
  SamplerState st(p, prompt, 0, 0);
  st.append(3);
  st.append(3);
  st.append(2);
  std::vector<float> l = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f};
  apply_penalties(l, p, st);
  // token 0 (prompt, 2 > 0):  2 / 2 = 1
  // token 1 (prompt, -1 <= 0): -1 * 2 = -2 (once, though it appears twice in the prompt)
  // token 2 (output x1):       0.5 / 2 = 0.25; - 0.5 * 1 = -0.25; - 0.25 = -0.5
  // token 3 (output x2):       3 / 2 = 1.5;   - 0.5 * 2 = 0.5;    - 0.25 = 0.25
  // token 4 (unseen):          -2 unchanged
  const std::vector<float> want = {1.0f, -2.0f, -0.5f, 0.25f, -2.0f};
  for (size_t i = 0; i < l.size(); ++i) EXPECT_FLOAT_EQ(l[i], want[i]) << i;
}

TEST(Penalties, RepetitionCountsATokenInPromptAndOutputOnce) {
  SamplingParams p;
  p.repetition_penalty = 4.0f;
  const std::vector<TokenId> prompt = {1};
  SamplerState st(p, prompt, 0, 0);
  st.append(1);
  std::vector<float> l = {1.0f, 8.0f};
  apply_penalties(l, p, st);
  EXPECT_FLOAT_EQ(l[0], 1.0f);
  EXPECT_FLOAT_EQ(l[1], 2.0f);  // 8 / 4, not 8 / 16
}

TEST(Penalties, DefaultsLeaveLogitsUntouched) {
  SamplingParams p;
  const std::vector<TokenId> prompt = {0, 1};
  SamplerState st(p, prompt, 0, 0);
  st.append(2);
  std::vector<float> l = {0.5f, -0.5f, 3.0f};
  const std::vector<float> before = l;
  apply_penalties(l, p, st);
  EXPECT_EQ(l, before);
}

TEST(MinTokens, MasksEosAndStopIdsUntilEnoughGenerated) {
  SamplingParams p;
  p.min_tokens = 2;
  p.stop_token_ids = {3};
  const float inf = std::numeric_limits<float>::infinity();
  for (int32_t n_generated = 0; n_generated < 4; ++n_generated) {
    std::vector<float> l = {1.0f, 2.0f, 3.0f, 4.0f};
    apply_min_tokens(l, p, /*eos_token=*/2, n_generated);
    const bool masked = n_generated < 2;
    EXPECT_EQ(l[2], masked ? -inf : 3.0f) << n_generated;
    EXPECT_EQ(l[3], masked ? -inf : 4.0f) << n_generated;
    EXPECT_EQ(l[0], 1.0f);
    EXPECT_EQ(l[1], 2.0f);
  }
  p.ignore_eos = true;  // EOS is an ordinary token then; stop ids are still held back
  std::vector<float> l = {1.0f, 2.0f, 3.0f, 4.0f};
  apply_min_tokens(l, p, 2, 0);
  EXPECT_EQ(l[2], 3.0f);
  EXPECT_EQ(l[3], -inf);
}

}  // namespace
}  // namespace dss
