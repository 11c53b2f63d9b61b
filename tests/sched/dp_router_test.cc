// DpRouter's policy as step timelines: each line routes one prompt given the replicas' loads and
// states the replica the policy names (sched/dp_router.h): least loaded with no remembered
// prefix, the replica holding the longest prefix when it is long enough and not too loaded, the
// least loaded again past the imbalance limit, and LRU forgetting deep blocks first.
#include "sched/dp_router.h"

#include <gtest/gtest.h>

#include <vector>

namespace dss {
namespace {

// n tokens: `prefix` shared ids then ids unique to `tag`.
std::vector<TokenId> prompt(int shared, int n, int tag) {
  std::vector<TokenId> p;
  for (int i = 0; i < n; ++i) p.push_back(i < shared ? 1000 + i : 50000 + tag * 1000 + i);
  return p;
}

DpRouterOptions opts(int n) {
  DpRouterOptions o;
  o.n_replicas = n;
  o.block_tokens = 16;
  o.min_match_tokens = 32;
  o.max_imbalance = 4;
  return o;
}

TEST(DpRouter, LeastLoadedWithoutAPrefix) {
  DpRouter r(opts(4));
  EXPECT_EQ(r.route(prompt(0, 40, 1), std::vector<int64_t>{0, 0, 0, 0}), 0);  // ties: lowest
  EXPECT_EQ(r.route(prompt(0, 40, 2), std::vector<int64_t>{1, 0, 0, 0}), 1);
  EXPECT_EQ(r.route(prompt(0, 40, 3), std::vector<int64_t>{1, 1, 3, 0}), 3);
  EXPECT_EQ(r.route(prompt(0, 8, 4), std::vector<int64_t>{2, 1, 0, 1}), 2);  // under one block
}

TEST(DpRouter, LongestRememberedPrefixWins) {
  DpRouter r(opts(4));
  // t0: a 64-token system prompt + question goes to the least loaded, 2.
  EXPECT_EQ(r.route(prompt(64, 80, 1), std::vector<int64_t>{3, 3, 0, 3}), 2);
  // t1: same system prompt, other question: 2 holds 4 blocks of it (64 >= 32 tokens) and is
  // within 4 of the least loaded (0 is at 0, 2 at 2).
  EXPECT_EQ(r.matched_blocks(prompt(64, 80, 2), 2), 4);
  EXPECT_EQ(r.route(prompt(64, 80, 2), std::vector<int64_t>{0, 1, 2, 1}), 2);
  // t2: a prompt sharing only 16 tokens (one block, under min_match_tokens): least loaded.
  EXPECT_EQ(r.route(prompt(16, 80, 3), std::vector<int64_t>{1, 0, 0, 1}), 1);
  // t3: two replicas hold the 16-token block (2 and 1) but only 2 holds 64: 2.
  EXPECT_EQ(r.route(prompt(64, 100, 4), std::vector<int64_t>{0, 1, 3, 0}), 2);
}

TEST(DpRouter, ImbalanceLimitBeatsTheCache) {
  DpRouter r(opts(2));
  EXPECT_EQ(r.route(prompt(64, 64, 1), std::vector<int64_t>{0, 0}), 0);
  EXPECT_EQ(r.route(prompt(64, 70, 2), std::vector<int64_t>{4, 0}), 0);  // 4 above: allowed
  EXPECT_EQ(r.route(prompt(64, 70, 3), std::vector<int64_t>{5, 0}), 1);  // 5 above: least loaded
  // Now both hold the prefix: the less loaded of the two.
  EXPECT_EQ(r.route(prompt(64, 70, 4), std::vector<int64_t>{2, 1}), 1);
  EXPECT_EQ(r.route(prompt(64, 70, 5), std::vector<int64_t>{1, 2}), 0);
}

TEST(DpRouter, LruForgetsDeepBlocksOfOldPromptsFirst) {
  DpRouterOptions o = opts(2);
  o.max_blocks = 6;
  DpRouter r(o);
  EXPECT_EQ(r.route(prompt(0, 64, 1), std::vector<int64_t>{0, 0}), 0);  // 4 blocks
  EXPECT_EQ(r.n_blocks(), 4);
  EXPECT_EQ(r.route(prompt(0, 48, 2), std::vector<int64_t>{1, 0}), 1);  // 3 more: 7 > 6
  EXPECT_EQ(r.n_blocks(), 6);
  EXPECT_EQ(r.matched_blocks(prompt(0, 64, 1), 0), 3);  // the first prompt's deepest block went
  EXPECT_EQ(r.matched_blocks(prompt(0, 48, 2), 1), 3);
}

TEST(DpRouter, SameInputsSameChoices) {
  auto run = [] {
    DpRouter r(opts(3));
    std::vector<int32_t> out;
    std::vector<int64_t> load = {0, 0, 0};
    for (int i = 0; i < 40; ++i) {
      const int32_t c = r.route(prompt((i % 3) * 32, 96, i), load);
      load[static_cast<size_t>(c)] += 1 + i % 2;
      out.push_back(c);
    }
    return out;
  };
  EXPECT_EQ(run(), run());
}

}  // namespace
}  // namespace dss
