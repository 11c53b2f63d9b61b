// BlockPool owns KV page ids and their reference counts; it knows nothing about tokens or bytes.
//
// Threading: engine thread only; not thread-safe.
// Ownership: `allocate` hands out a page with refcount 1 owned by the caller. Every other owner
//   (a radix node, a second request sharing the page) calls `retain`, and every owner calls
//   `release` exactly once; the page returns to the free list when its refcount reaches 0.
// Misuse (double release, retain of a free page, an id out of range) is a programmer error and
//   aborts through DSS_CHECK.
// Cost: allocate, retain and release are O(1); check_integrity is O(n_pages).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/types.h"

namespace dss {

class BlockPool {
 public:
  // Page ids are 0..n_pages-1, all free. n_pages >= 0 (0 gives a pool that never allocates).
  explicit BlockPool(int32_t n_pages);

  // A free page with refcount 1, or nullopt when none is free (the caller evicts, then retries).
  // Pages come out in increasing id order from a fresh pool (deterministic; handy in tests).
  std::optional<PageId> allocate();
  // Another owner shares `page`. Precondition: refcount(page) > 0.
  void retain(PageId page);
  // One owner drops `page`. Precondition: refcount(page) > 0.
  void release(PageId page);

  int32_t n_pages() const { return static_cast<int32_t>(refcount_.size()); }
  int32_t n_free() const { return static_cast<int32_t>(free_list_.size()); }
  int32_t n_used() const { return n_pages() - n_free(); }
  // 0 for a free page. Precondition: 0 <= page < n_pages().
  int32_t refcount(PageId page) const;

  // Aborts unless: the free list has no duplicates and holds exactly the pages with refcount 0,
  // every other page has refcount > 0, and n_free() + n_used() == n_pages().
  void check_integrity() const;

 private:
  void check_id(PageId page) const;

  std::vector<int32_t> refcount_;  // [n_pages]
  std::vector<PageId> free_list_;  // stack; back() is handed out next
};

}  // namespace dss
