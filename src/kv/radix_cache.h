// RadixCache maps token prefixes to runs of KV pages so later requests can skip prefill.
//
// Threading: engine thread only; not thread-safe.
// Ownership: the cache is built over one BlockPool, which must outlive it. Each page stored in
//   the tree holds exactly one BlockPool reference, taken by `insert` (retain) and dropped by
//   `evict` or the destructor (release). The caller's own references are never touched: after
//   `insert` the caller still releases every page it holds, duplicates included.
// Validity: a PrefixHandle (from `match` or `insert`) stays valid across later inserts (a split
//   keeps the handle's node as the lower half), but `evict` may destroy an unlocked node, so lock
//   the handle before the next `evict` if its pages are to be used.
// Invariant: every edge holds a whole number of pages (tokens == pages * page_size); a partial
//   tail page is never inserted or shared.
// Counters: `match` is const and changes nothing (not even LRU times). Hits and misses are counted
//   only when the caller calls `record_match`; LRU times advance on `lock`, `unlock` and `insert`.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/types.h"
#include "kv/block_pool.h"

namespace dss {

struct RadixNode;  // private to radix_cache.cc

// Names the deepest tree node touched by a match or an insert. Empty (node == nullptr) when no
// page matched. Locking a handle protects every node from the root down to it; that node's whole
// edge is protected even when the match ended part-way along it (a few extra pages, never fewer).
struct PrefixHandle {
  RadixNode* node = nullptr;
  bool empty() const { return node == nullptr; }
};

struct MatchResult {
  int32_t n_tokens = 0;       // matched prefix length, a multiple of page_size
  std::vector<PageId> pages;  // [n_tokens / page_size], in prefix order; the tree's references
  PrefixHandle handle;
};

struct InsertResult {
  // The first n_dup_pages of the inserted pages belong to a prefix that was already cached: the
  // tree kept its own pages for them and took no reference on the caller's. The remaining
  // n_new_pages were stored and retained once each.
  int32_t n_dup_pages = 0;
  int32_t n_new_pages = 0;
  PrefixHandle handle;  // the node holding the last inserted page (empty if nothing inserted)
};

struct RadixSizeInfo {
  int32_t n_nodes = 0;            // excluding the root
  int32_t n_cached_pages = 0;     // pages stored in the tree
  int32_t n_evictable_pages = 0;  // in unlocked nodes (all of them reachable by leaf eviction)
  int32_t n_locked_pages = 0;     // in nodes with lock count > 0
};

class RadixCache {
 public:
  // page_size > 0 tokens per page.
  RadixCache(int32_t page_size, BlockPool& pool);
  // Releases every page the tree still holds. Precondition: no node is locked.
  ~RadixCache();
  RadixCache(const RadixCache&) = delete;
  RadixCache& operator=(const RadixCache&) = delete;

  int32_t page_size() const { return page_size_; }

  // Longest cached prefix of `tokens` made of whole pages. Read-only.
  MatchResult match(std::span<const TokenId> tokens) const;
  // Counts n_query_tokens - result.n_tokens misses and result.n_tokens hits.
  void record_match(const MatchResult& result, int32_t n_query_tokens);

  // Increments lock counts from the handle's node up to the root; locked nodes are never evicted.
  // Every lock needs one unlock with the same handle. Empty handles are no-ops.
  void lock(const PrefixHandle& handle);
  void unlock(const PrefixHandle& handle);

  // Stores `tokens` with `pages` (tokens.size() == pages.size() * page_size, checked). Pages of
  // the already-cached prefix are reported as duplicates (see InsertResult); new pages are
  // retained once each.
  InsertResult insert(std::span<const TokenId> tokens, std::span<const PageId> pages);

  // Removes unlocked leaves, least recently used first, until at least n_pages pages left the tree
  // or nothing more is evictable, releasing the tree's reference on each page. Returns the number
  // of pages removed from the tree (whole leaves, so possibly more than n_pages). A page goes back
  // to the pool's free list only if the tree held its last reference.
  int32_t evict(int32_t n_pages);

  RadixSizeInfo size_info() const;
  int64_t n_hit_tokens() const { return n_hit_tokens_; }
  int64_t n_miss_tokens() const { return n_miss_tokens_; }

  // Aborts unless: every edge length is a positive multiple of page_size with one page per
  // page_size tokens, children are keyed by their first page, parent links agree, each lock count
  // equals the node's own handle locks plus its children's lock counts, no page is stored twice,
  // every stored page has pool refcount > 0, and the size counters match a recount.
  void check_integrity() const;

 private:
  void touch_path(RadixNode* node);
  RadixNode* split(RadixNode* node, int32_t n_upper_pages);

  int32_t page_size_;
  BlockPool* pool_;
  std::unique_ptr<RadixNode> root_;
  uint64_t clock_ = 0;    // logical LRU time
  uint64_t next_id_ = 0;  // creation order; breaks LRU ties deterministically
  int32_t n_nodes_ = 0;
  int32_t n_cached_pages_ = 0;
  int32_t n_locked_pages_ = 0;
  int64_t n_hit_tokens_ = 0;
  int64_t n_miss_tokens_ = 0;
};

}  // namespace dss
