// Prompt-lookup drafting: the continuation of the latest earlier occurrence of the longest
// matching tail.
#include "sched/ngram_draft.h"

#include <gtest/gtest.h>

#include <vector>

namespace dss {
namespace {

std::vector<TokenId> draft(const std::vector<TokenId>& tokens, int32_t k, int32_t n_min = 1,
                           int32_t n_max = 4) {
  std::vector<TokenId> out(static_cast<size_t>(k));
  out.resize(static_cast<size_t>(ngram_draft(tokens, n_min, n_max, out)));
  return out;
}

TEST(NgramDraft, CopiesWhatFollowedTheLatestOccurrenceOfTheLongestTail) {
  // Tail "2 3" occurs at 1 (followed by 4 5 6) and at 7 (followed by 9); the latest wins.
  EXPECT_EQ(draft({1, 2, 3, 4, 5, 6, 0, 2, 3, 9, 7, 2, 3}, 3), (std::vector<TokenId>{9, 7, 2}));
  // The longer tail "7 2 3" occurs only at 0, so it beats the later "2 3".
  EXPECT_EQ(draft({7, 2, 3, 4, 5, 2, 3, 9, 7, 2, 3}, 2), (std::vector<TokenId>{4, 5}));
  // A continuation shorter than k (it runs into the tail itself) is cut there.
  EXPECT_EQ(draft({5, 6, 5}, 4), (std::vector<TokenId>{6, 5}));
}

TEST(NgramDraft, NothingWithoutAnEarlierOccurrence) {
  EXPECT_TRUE(draft({1, 2, 3, 4}, 3).empty());
  EXPECT_TRUE(draft({1}, 3).empty());
  EXPECT_TRUE(draft({}, 3).empty());
  // n_min 2: the single-token match "3" does not count.
  EXPECT_TRUE(draft({3, 1, 2, 3}, 3, 2).empty());
  EXPECT_EQ(draft({3, 1, 2, 3}, 3, 1), (std::vector<TokenId>{1, 2, 3}));
}

}  // namespace
}  // namespace dss
