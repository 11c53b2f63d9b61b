// PrefixLock: RAII lock on a RadixCache prefix; locks on construction, unlocks in its destructor.
//
// Move-only. A moved-from or default-constructed PrefixLock holds nothing. The cache must
// outlive the lock. Engine thread only, like RadixCache.
#pragma once

#include <utility>

#include "kv/radix_cache.h"

namespace dss {

class PrefixLock {
 public:
  PrefixLock() = default;
  PrefixLock(RadixCache& cache, const PrefixHandle& handle) : cache_(&cache), handle_(handle) {
    cache_->lock(handle_);
  }
  ~PrefixLock() { reset(); }
  PrefixLock(PrefixLock&& other) noexcept
      : cache_(std::exchange(other.cache_, nullptr)), handle_(std::exchange(other.handle_, {})) {}
  PrefixLock& operator=(PrefixLock&& other) noexcept {
    if (this != &other) {
      reset();
      cache_ = std::exchange(other.cache_, nullptr);
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  PrefixLock(const PrefixLock&) = delete;
  PrefixLock& operator=(const PrefixLock&) = delete;

  // Unlocks now (idempotent).
  void reset() {
    if (cache_ != nullptr) cache_->unlock(handle_);
    cache_ = nullptr;
    handle_ = {};
  }
  const PrefixHandle& handle() const { return handle_; }
  bool holds() const { return cache_ != nullptr; }

 private:
  RadixCache* cache_ = nullptr;
  PrefixHandle handle_;
};

}  // namespace dss
