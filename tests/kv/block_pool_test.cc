// BlockPool: exhaustion, refcounts with sharing, and the aborts on misuse.
#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <set>

namespace dss {
namespace {

TEST(BlockPool, HandsOutEveryPageOnceThenNothing) {
  BlockPool pool(5);
  EXPECT_EQ(pool.n_pages(), 5);
  EXPECT_EQ(pool.n_free(), 5);
  std::set<PageId> got;
  for (int i = 0; i < 5; ++i) {
    const std::optional<PageId> page = pool.allocate();
    ASSERT_TRUE(page.has_value());
    EXPECT_GE(*page, 0);
    EXPECT_LT(*page, 5);
    EXPECT_EQ(pool.refcount(*page), 1);
    got.insert(*page);
    pool.check_integrity();
  }
  EXPECT_EQ(got.size(), 5u);  // all distinct
  EXPECT_EQ(pool.n_free(), 0);
  EXPECT_EQ(pool.n_used(), 5);
  EXPECT_FALSE(pool.allocate().has_value());
  for (const PageId page : got) pool.release(page);
  EXPECT_EQ(pool.n_free(), 5);
  pool.check_integrity();
}

TEST(BlockPool, FreshPoolAllocatesInIdOrder) {
  BlockPool pool(3);
  EXPECT_EQ(pool.allocate(), std::optional<PageId>(0));
  EXPECT_EQ(pool.allocate(), std::optional<PageId>(1));
  EXPECT_EQ(pool.allocate(), std::optional<PageId>(2));
}

TEST(BlockPool, ReleasedPageIsReusable) {
  BlockPool pool(1);
  const PageId page = *pool.allocate();
  EXPECT_FALSE(pool.allocate().has_value());
  pool.release(page);
  EXPECT_EQ(pool.refcount(page), 0);
  EXPECT_EQ(pool.allocate(), std::optional<PageId>(page));
}

TEST(BlockPool, SharedPageIsFreedByTheLastOwnerOnly) {
  BlockPool pool(4);
  const PageId page = *pool.allocate();
  pool.retain(page);  // e.g. a radix node
  pool.retain(page);  // e.g. a second request
  EXPECT_EQ(pool.refcount(page), 3);
  EXPECT_EQ(pool.n_free(), 3);
  pool.release(page);
  pool.release(page);
  EXPECT_EQ(pool.refcount(page), 1);
  EXPECT_EQ(pool.n_free(), 3);  // still owned once
  pool.check_integrity();
  pool.release(page);
  EXPECT_EQ(pool.refcount(page), 0);
  EXPECT_EQ(pool.n_free(), 4);
  pool.check_integrity();
}

TEST(BlockPool, EmptyPoolNeverAllocates) {
  BlockPool pool(0);
  EXPECT_FALSE(pool.allocate().has_value());
  EXPECT_EQ(pool.n_free(), 0);
  pool.check_integrity();
}

TEST(BlockPoolDeathTest, MisuseAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  BlockPool pool(2);
  const PageId page = *pool.allocate();
  pool.release(page);
  EXPECT_DEATH(pool.release(page), "double release");
  EXPECT_DEATH(pool.retain(page), "retain of a free page");
  EXPECT_DEATH(pool.release(2), "n_pages=2");
  EXPECT_DEATH(pool.retain(-1), "page=-1");
  EXPECT_DEATH((void)pool.refcount(7), "page=7");
}

}  // namespace
}  // namespace dss
