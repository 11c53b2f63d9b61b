#include "kv/block_pool.h"

#include "base/check.h"

namespace dss {

BlockPool::BlockPool(int32_t n_pages) {
  DSS_CHECK(n_pages >= 0, "n_pages=", n_pages);
  refcount_.assign(static_cast<size_t>(n_pages), 0);
  free_list_.reserve(static_cast<size_t>(n_pages));
  // Reverse order so that the stack hands out 0, 1, 2, ... from a fresh pool.
  for (PageId page = n_pages - 1; page >= 0; --page) free_list_.push_back(page);
}

void BlockPool::check_id(PageId page) const {
  DSS_CHECK(page >= 0 && page < n_pages(), "page=", page, " n_pages=", n_pages());
}

std::optional<PageId> BlockPool::allocate() {
  if (free_list_.empty()) return std::nullopt;
  const PageId page = free_list_.back();
  free_list_.pop_back();
  DSS_DCHECK(refcount_[static_cast<size_t>(page)] == 0, "page=", page);
  refcount_[static_cast<size_t>(page)] = 1;
  return page;
}

void BlockPool::retain(PageId page) {
  check_id(page);
  int32_t& rc = refcount_[static_cast<size_t>(page)];
  DSS_CHECK(rc > 0, "retain of a free page: page=", page);
  ++rc;
}

void BlockPool::release(PageId page) {
  check_id(page);
  int32_t& rc = refcount_[static_cast<size_t>(page)];
  DSS_CHECK(rc > 0, "release of a free page (double release?): page=", page);
  if (--rc == 0) free_list_.push_back(page);
}

int32_t BlockPool::refcount(PageId page) const {
  check_id(page);
  return refcount_[static_cast<size_t>(page)];
}

void BlockPool::check_integrity() const {
  std::vector<uint8_t> on_free_list(refcount_.size(), 0);
  for (const PageId page : free_list_) {
    check_id(page);
    DSS_CHECK(on_free_list[static_cast<size_t>(page)] == 0, "page on the free list twice: ", page);
    on_free_list[static_cast<size_t>(page)] = 1;
    DSS_CHECK(refcount_[static_cast<size_t>(page)] == 0, "free page with refcount ",
              refcount_[static_cast<size_t>(page)], ": page=", page);
  }
  int32_t n_used_pages = 0;
  for (size_t i = 0; i < refcount_.size(); ++i) {
    DSS_CHECK(refcount_[i] >= 0, "negative refcount: page=", i);
    if (on_free_list[i] == 0) {
      DSS_CHECK(refcount_[i] > 0, "page neither free nor referenced (leaked): page=", i);
      ++n_used_pages;
    }
  }
  DSS_CHECK(n_used_pages + n_free() == n_pages(), "used=", n_used_pages, " free=", n_free(),
            " n_pages=", n_pages());
}

}  // namespace dss
