// RadixCache over a BlockPool, page size 4 unless stated: matching whole pages only, duplicates,
// splits, locks, LRU eviction, and a randomized run that audits every page reference.
#include "kv/radix_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "base/rng.h"
#include "kv/prefix_lock.h"

namespace dss {
namespace {

constexpr int32_t kPs = 4;

std::vector<TokenId> iota_tokens(int32_t n, TokenId first) {
  std::vector<TokenId> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

std::vector<PageId> alloc_pages(BlockPool& pool, int32_t n) {
  std::vector<PageId> pages;
  for (int32_t i = 0; i < n; ++i) pages.push_back(*pool.allocate());
  return pages;
}

void release_all(BlockPool& pool, const std::vector<PageId>& pages) {
  for (const PageId p : pages) pool.release(p);
}

// Inserts tokens with freshly allocated pages and drops the caller's references, as a finished
// request does. Returns the pages it allocated.
std::vector<PageId> insert_and_drop(RadixCache& cache, BlockPool& pool,
                                    const std::vector<TokenId>& tokens) {
  std::vector<PageId> pages = alloc_pages(pool, static_cast<int32_t>(tokens.size()) / kPs);
  (void)cache.insert(tokens, pages);
  release_all(pool, pages);
  return pages;
}

TEST(RadixCache, EmptyCacheMatchesNothing) {
  BlockPool pool(4);
  RadixCache cache(kPs, pool);
  const MatchResult m = cache.match(iota_tokens(9, 0));
  EXPECT_EQ(m.n_tokens, 0);
  EXPECT_TRUE(m.pages.empty());
  EXPECT_TRUE(m.handle.empty());
  cache.check_integrity();
}

TEST(RadixCache, MatchesOnlyWholeCachedPages) {
  BlockPool pool(8);
  RadixCache cache(kPs, pool);
  const std::vector<TokenId> a = iota_tokens(12, 100);  // 3 pages
  const std::vector<PageId> pages = alloc_pages(pool, 3);
  const InsertResult ins = cache.insert(a, pages);
  EXPECT_EQ(ins.n_dup_pages, 0);
  EXPECT_EQ(ins.n_new_pages, 3);
  for (const PageId p : pages) EXPECT_EQ(pool.refcount(p), 2);  // caller + tree
  release_all(pool, pages);
  for (const PageId p : pages) EXPECT_EQ(pool.refcount(p), 1);  // tree only

  std::vector<TokenId> longer = a;
  longer.push_back(7);
  longer.push_back(8);
  MatchResult m = cache.match(longer);  // 14 tokens: the 3 cached pages, then a partial page
  EXPECT_EQ(m.n_tokens, 12);
  EXPECT_EQ(m.pages, pages);

  m = cache.match(std::span<const TokenId>(a).first(11));  // third page incomplete in the query
  EXPECT_EQ(m.n_tokens, 8);
  EXPECT_EQ(m.pages, std::vector<PageId>(pages.begin(), pages.begin() + 2));

  std::vector<TokenId> diverge = a;
  diverge[5] = -1;  // inside page 1: only page 0 is shared
  m = cache.match(diverge);
  EXPECT_EQ(m.n_tokens, 4);
  EXPECT_EQ(m.pages, std::vector<PageId>{pages[0]});
  EXPECT_FALSE(m.handle.empty());
  cache.check_integrity();
  pool.check_integrity();
}

TEST(RadixCache, DuplicatePrefixIsReportedAndNotRetained) {
  BlockPool pool(16);
  RadixCache cache(kPs, pool);
  const std::vector<TokenId> a = iota_tokens(12, 0);
  const std::vector<PageId> a_pages = insert_and_drop(cache, pool, a);

  // Same first two pages (recomputed by another request into its own pages), then two new pages.
  std::vector<TokenId> b(a.begin(), a.begin() + 8);
  for (TokenId t = 50; t < 58; ++t) b.push_back(t);
  const std::vector<PageId> b_pages = alloc_pages(pool, 4);
  const InsertResult ins = cache.insert(b, b_pages);
  EXPECT_EQ(ins.n_dup_pages, 2);
  EXPECT_EQ(ins.n_new_pages, 2);
  EXPECT_EQ(pool.refcount(b_pages[0]), 1);  // not taken by the tree
  EXPECT_EQ(pool.refcount(b_pages[1]), 1);
  EXPECT_EQ(pool.refcount(b_pages[2]), 2);  // taken
  EXPECT_EQ(pool.refcount(b_pages[3]), 2);
  const int32_t n_free_before = pool.n_free();
  release_all(pool, b_pages);
  EXPECT_EQ(pool.n_free(), n_free_before + 2);  // the two duplicates went back

  const MatchResult m = cache.match(b);
  EXPECT_EQ(m.n_tokens, 16);
  // The tree kept its own pages for the shared prefix: a's first two, then b's new two.
  EXPECT_EQ(m.pages, (std::vector<PageId>{a_pages[0], a_pages[1], b_pages[2], b_pages[3]}));
  // Divergence after page 1 split a's edge: nodes = shared [2 pages] + a's tail + b's tail.
  EXPECT_EQ(cache.size_info().n_nodes, 3);
  EXPECT_EQ(cache.size_info().n_cached_pages, 5);
  EXPECT_EQ(cache.match(a).pages, a_pages);

  // Inserting exactly what is cached stores nothing new.
  const std::vector<PageId> again = alloc_pages(pool, 3);
  const InsertResult ins2 = cache.insert(a, again);
  EXPECT_EQ(ins2.n_dup_pages, 3);
  EXPECT_EQ(ins2.n_new_pages, 0);
  release_all(pool, again);
  cache.check_integrity();
  pool.check_integrity();
}

TEST(RadixCache, DivergenceInsideAPageBranchesAtThePageBoundary) {
  BlockPool pool(16);
  RadixCache cache(kPs, pool);
  const std::vector<TokenId> a = iota_tokens(8, 0);
  std::vector<TokenId> b = a;
  b[6] = 99;  // page 1 differs in its third token: two children share first token 4
  insert_and_drop(cache, pool, a);
  const std::vector<PageId> b_pages = insert_and_drop(cache, pool, b);
  EXPECT_EQ(cache.size_info().n_cached_pages, 3);
  EXPECT_EQ(cache.match(a).n_tokens, 8);
  const MatchResult mb = cache.match(b);
  EXPECT_EQ(mb.n_tokens, 8);
  EXPECT_EQ(mb.pages[1], b_pages[1]);
  cache.check_integrity();
}

TEST(RadixCache, InsertRejectsPartialPages) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  BlockPool pool(4);
  RadixCache cache(kPs, pool);
  const std::vector<TokenId> t = iota_tokens(6, 0);
  const std::vector<PageId> pages = {0, 1};
  EXPECT_DEATH((void)cache.insert(t, pages), "partial pages");
}

// The integrity check is not vacuous: dropping the tree's reference behind its back is caught,
// as is an unlock without a lock.
TEST(RadixCacheDeathTest, IntegrityCatchesAStolenReferenceAndStrayUnlock) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  BlockPool pool(4);
  RadixCache cache(kPs, pool);
  const std::vector<PageId> pages = insert_and_drop(cache, pool, iota_tokens(4, 0));
  const PrefixHandle h = cache.match(iota_tokens(4, 0)).handle;
  EXPECT_DEATH(cache.unlock(h), "unlock without a matching lock");
  EXPECT_DEATH(
      {
        pool.release(pages[0]);
        cache.check_integrity();
      },
      "not referenced in the pool");
  EXPECT_EQ(cache.evict(0), 0);
  EXPECT_EQ(cache.evict(-3), 0);
}

TEST(RadixCache, LockedPrefixIsNeverEvicted) {
  BlockPool pool(16);
  RadixCache cache(kPs, pool);
  const std::vector<TokenId> a = iota_tokens(8, 0);
  const std::vector<TokenId> b = iota_tokens(12, 100);
  insert_and_drop(cache, pool, a);
  insert_and_drop(cache, pool, b);
  const MatchResult ma = cache.match(a);
  cache.lock(ma.handle);
  RadixSizeInfo info = cache.size_info();
  EXPECT_EQ(info.n_locked_pages, 2);
  EXPECT_EQ(info.n_evictable_pages, 3);
  cache.check_integrity();

  EXPECT_EQ(cache.evict(100), 3);  // only b
  EXPECT_EQ(cache.match(a).n_tokens, 8);
  EXPECT_EQ(cache.match(b).n_tokens, 0);
  EXPECT_EQ(cache.evict(100), 0);
  cache.unlock(ma.handle);
  EXPECT_EQ(cache.size_info().n_evictable_pages, 2);
  EXPECT_EQ(cache.evict(100), 2);
  EXPECT_EQ(pool.n_free(), 16);
  cache.check_integrity();
  pool.check_integrity();
}

TEST(RadixCache, LockingAMidEdgeMatchSurvivesASplit) {
  BlockPool pool(16);
  RadixCache cache(kPs, pool);
  const std::vector<TokenId> a = iota_tokens(12, 0);  // one edge of 3 pages
  insert_and_drop(cache, pool, a);
  const MatchResult m = cache.match(std::span<const TokenId>(a).first(8));  // ends inside the edge
  EXPECT_EQ(m.n_tokens, 8);
  PrefixLock lock(cache, m.handle);
  // The whole edge is protected (3 pages), not fewer than the 2 matched.
  EXPECT_EQ(cache.size_info().n_locked_pages, 3);

  std::vector<TokenId> b(a.begin(), a.begin() + 4);  // shares page 0, splits the locked edge
  for (TokenId t = 70; t < 78; ++t) b.push_back(t);
  insert_and_drop(cache, pool, b);
  cache.check_integrity();  // lock counts copied to the new upper node
  EXPECT_EQ(cache.size_info().n_locked_pages, 3);
  EXPECT_EQ(cache.evict(100), 2);  // b's own leaf only
  EXPECT_EQ(cache.match(a).n_tokens, 12);
  lock.reset();
  EXPECT_EQ(cache.size_info().n_locked_pages, 0);
  EXPECT_EQ(cache.evict(100), 3);
  EXPECT_EQ(pool.n_free(), 16);
  cache.check_integrity();
}

TEST(RadixCache, EvictsLeastRecentlyUsedLeafFirst) {
  BlockPool pool(8);
  RadixCache cache(kPs, pool);
  const std::vector<TokenId> a = iota_tokens(4, 0), b = iota_tokens(4, 10), c = iota_tokens(4, 20);
  insert_and_drop(cache, pool, a);  // order of use: a, b, c
  insert_and_drop(cache, pool, b);
  insert_and_drop(cache, pool, c);
  const MatchResult ma = cache.match(a);  // match alone does not count as use ...
  cache.lock(ma.handle);                  // ... lock/unlock does: order now b, c, a
  cache.unlock(ma.handle);
  EXPECT_EQ(cache.evict(1), 1);
  EXPECT_EQ(cache.match(b).n_tokens, 0);
  EXPECT_EQ(cache.match(c).n_tokens, 4);
  EXPECT_EQ(cache.evict(1), 1);
  EXPECT_EQ(cache.match(c).n_tokens, 0);
  EXPECT_EQ(cache.match(a).n_tokens, 4);
  EXPECT_EQ(cache.evict(1), 1);
  EXPECT_EQ(cache.size_info().n_nodes, 0);
  cache.check_integrity();
}

TEST(RadixCache, EvictionWalksUpFromLeavesToEmptiedParents) {
  BlockPool pool(8);
  RadixCache cache(kPs, pool);
  const std::vector<TokenId> a = iota_tokens(8, 0);
  std::vector<TokenId> b(a.begin(), a.begin() + 4);
  for (TokenId t = 40; t < 44; ++t) b.push_back(t);
  insert_and_drop(cache, pool, a);
  insert_and_drop(cache, pool, b);  // shared page 0, then two one-page leaves
  EXPECT_EQ(cache.size_info().n_nodes, 3);
  EXPECT_EQ(cache.evict(3), 3);  // both leaves, then the parent they left childless
  EXPECT_EQ(cache.size_info().n_nodes, 0);
  EXPECT_EQ(pool.n_free(), 8);
}

TEST(RadixCache, EvictReturnsPagesOnlyWhenTheTreeHeldTheLastReference) {
  BlockPool pool(8);
  RadixCache cache(kPs, pool);
  const std::vector<TokenId> a = iota_tokens(8, 0);
  const std::vector<PageId> pages = alloc_pages(pool, 2);
  (void)cache.insert(a, pages);
  pool.release(pages[0]);  // the caller keeps pages[1]
  EXPECT_EQ(pool.n_free(), 6);
  EXPECT_EQ(cache.evict(1), 2);  // one leaf of two pages
  EXPECT_EQ(pool.n_free(), 7);
  EXPECT_EQ(pool.refcount(pages[1]), 1);
  pool.release(pages[1]);
  EXPECT_EQ(pool.n_free(), 8);
  pool.check_integrity();
}

TEST(RadixCache, CountsHitsAndMissesOnlyWhenRecorded) {
  BlockPool pool(8);
  RadixCache cache(kPs, pool);
  const std::vector<TokenId> a = iota_tokens(8, 0);
  insert_and_drop(cache, pool, a);
  std::vector<TokenId> q = a;
  q.insert(q.end(), {1, 2, 3});  // 11 tokens, 8 cached
  const MatchResult m = cache.match(q);
  EXPECT_EQ(cache.n_hit_tokens(), 0);
  cache.record_match(m, static_cast<int32_t>(q.size()));
  EXPECT_EQ(cache.n_hit_tokens(), 8);
  EXPECT_EQ(cache.n_miss_tokens(), 3);
}

TEST(RadixCache, DestructorReleasesTreePages) {
  BlockPool pool(8);
  {
    RadixCache cache(kPs, pool);
    insert_and_drop(cache, pool, iota_tokens(12, 0));
    EXPECT_EQ(pool.n_free(), 5);
  }
  EXPECT_EQ(pool.n_free(), 8);
  pool.check_integrity();
}

TEST(RadixCache, PrefixLockIsMovableAndUnlocksOnce) {
  BlockPool pool(8);
  RadixCache cache(kPs, pool);
  insert_and_drop(cache, pool, iota_tokens(4, 0));
  {
    PrefixLock l1(cache, cache.match(iota_tokens(4, 0)).handle);
    PrefixLock l2 = std::move(l1);
    EXPECT_FALSE(l1.holds());  // NOLINT(bugprone-use-after-move): moved-from state is specified
    EXPECT_TRUE(l2.holds());
    EXPECT_EQ(cache.evict(10), 0);
    cache.check_integrity();
  }
  EXPECT_EQ(cache.size_info().n_locked_pages, 0);
  EXPECT_EQ(cache.evict(10), 1);
}

// A few thousand random requests against a small pool, page size 2 and a 3-token alphabet (so
// prefixes collide and edges split often). Each request matches and locks its cached prefix,
// allocates pages for the rest (evicting when the pool is dry), and on finish inserts everything
// and drops its own references. After every operation: both integrity checks, and for every page
// refcount == (tree reference: 0 or 1) + references held by live requests, with the tree
// references summing to the tree's page count. Every page a match returns must have been computed
// for exactly that prefix (the property that makes reuse correct).
TEST(RadixCache, RandomOperationsKeepEveryPageAccountedFor) {
  constexpr int32_t kRandPs = 2, kNPages = 48;
  BlockPool pool(kNPages);
  RadixCache cache(kRandPs, pool);
  Rng rng(12345);
  auto rand_int = [&](int32_t n) {
    return static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(n));
  };

  struct Live {
    std::vector<TokenId> tokens;  // whole pages only
    std::vector<PageId> matched;  // the tree's pages, protected by `lock`
    std::vector<PageId> own;      // allocated by this request, one reference each
    PrefixLock lock;
  };
  std::vector<Live> live;
  std::vector<std::vector<TokenId>> computed_for(kNPages);  // page -> prefix it holds KV for

  auto audit = [&] {
    pool.check_integrity();
    cache.check_integrity();
    std::vector<int32_t> held(kNPages, 0);
    for (const Live& r : live)
      for (const PageId p : r.own) ++held[static_cast<size_t>(p)];
    int32_t n_tree = 0;
    for (PageId p = 0; p < kNPages; ++p) {
      const int32_t tree_refs = pool.refcount(p) - held[static_cast<size_t>(p)];
      ASSERT_TRUE(tree_refs == 0 || tree_refs == 1) << "page " << p << " tree_refs " << tree_refs;
      n_tree += tree_refs;
    }
    ASSERT_EQ(n_tree, cache.size_info().n_cached_pages);
  };

  int64_t n_hit_pages = 0, n_inserts = 0, n_evicted = 0;
  for (int step = 0; step < 4000; ++step) {
    const int32_t op = rand_int(10);
    if (op < 5 && live.size() < 6) {  // start a request
      Live r;
      const int32_t n_tok = kRandPs * (1 + rand_int(6));
      for (int32_t i = 0; i < n_tok; ++i) r.tokens.push_back(rand_int(3));
      const MatchResult m = cache.match(r.tokens);
      cache.record_match(m, n_tok);
      for (size_t i = 0; i < m.pages.size(); ++i) {
        const std::vector<TokenId> prefix(
            r.tokens.begin(), r.tokens.begin() + static_cast<ptrdiff_t>((i + 1) * kRandPs));
        ASSERT_EQ(computed_for[static_cast<size_t>(m.pages[i])], prefix) << "step " << step;
      }
      n_hit_pages += static_cast<int64_t>(m.pages.size());
      r.matched = m.pages;
      r.lock = PrefixLock(cache, m.handle);
      bool ok = true;
      for (int32_t i = static_cast<int32_t>(m.pages.size()); i < n_tok / kRandPs; ++i) {
        std::optional<PageId> page = pool.allocate();
        if (!page) {
          n_evicted += cache.evict(1 + rand_int(3));
          page = pool.allocate();
        }
        if (!page) {
          ok = false;
          break;
        }
        computed_for[static_cast<size_t>(*page)] =
            std::vector<TokenId>(r.tokens.begin(), r.tokens.begin() + (i + 1) * kRandPs);
        r.own.push_back(*page);
      }
      if (!ok) {  // out of memory: give everything back (what preemption does)
        for (const PageId p : r.own) pool.release(p);
      } else {
        live.push_back(std::move(r));
      }
    } else if (op < 8 && !live.empty()) {  // finish a request
      const size_t i = static_cast<size_t>(rand_int(static_cast<int32_t>(live.size())));
      Live r = std::move(live[i]);
      live.erase(live.begin() + static_cast<ptrdiff_t>(i));
      std::vector<PageId> pages = r.matched;
      pages.insert(pages.end(), r.own.begin(), r.own.end());
      const InsertResult ins = cache.insert(r.tokens, pages);
      ASSERT_GE(ins.n_dup_pages, static_cast<int32_t>(r.matched.size()));  // locked: still there
      ASSERT_EQ(ins.n_dup_pages + ins.n_new_pages, static_cast<int32_t>(pages.size()));
      const MatchResult again = cache.match(r.tokens);
      ASSERT_EQ(again.n_tokens, static_cast<int32_t>(r.tokens.size()));
      for (const PageId p : r.own) pool.release(p);
      ++n_inserts;
    } else {
      n_evicted += cache.evict(rand_int(4));
    }
    audit();
    if (HasFatalFailure()) return;
  }
  // Sanity that the run exercised sharing and eviction (these depend only on the fixed seed).
  EXPECT_GT(n_hit_pages, 0);
  EXPECT_GT(n_inserts, 100);
  EXPECT_GT(n_evicted, 0);
  for (Live& r : live)
    for (const PageId p : r.own) pool.release(p);  // aborted without inserting
  live.clear();                                    // unlocks
  cache.evict(kNPages);
  EXPECT_EQ(cache.size_info().n_cached_pages, 0);
  EXPECT_EQ(pool.n_free(), kNPages);
  audit();
}

}  // namespace
}  // namespace dss
