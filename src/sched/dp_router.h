// DpRouter: which data-parallel replica (or DP-attention group) a new request goes to: the one
// whose prefix cache most likely holds the longest prefix of its prompt, else the least loaded.
// The front has no view of the replicas' caches, so the router remembers, per replica, the
// prompts it sent there: chained 64-bit hashes of their block-aligned prefixes (a prefix cache
// shares whole pages, so block_tokens is the page size), each with the set of replicas it was
// sent to, in an LRU of at most max_blocks hashes. A replica's cache evicts too, so a remembered
// prefix may be gone: that costs a worse choice (a recomputed prefix), never a wrong answer.
//
// Policy (pure and deterministic; route() is the whole of it):
//   match[r] = leading blocks of the prompt remembered under replica r;
//   least    = the least loaded replica (ties: lowest index);
//   cached   = among replicas with the largest match, the least loaded (ties: lowest index);
//   if match[cached] * block_tokens >= min_match_tokens and
//      load[cached] - load[least] <= max_imbalance: cached, else least.
// The chosen replica then remembers the prompt's blocks. `load` is the caller's measure of
// outstanding work per replica (requests in flight; SGLang's router uses queue length the same
// way, with an absolute imbalance threshold).
// Threading: not thread-safe (the front calls it under its own lock).
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/types.h"

namespace dss {

struct DpRouterOptions {
  int32_t n_replicas = 1;         // 1..64
  int32_t block_tokens = 64;      // hash granularity: the replicas' KV page size
  int64_t max_blocks = 1 << 20;   // remembered prefix blocks over all replicas (LRU)
  int32_t min_match_tokens = 64;  // a shorter remembered prefix is not worth an imbalance
  int64_t max_imbalance = 8;      // load above the least loaded a cache hit may cost
};

class DpRouter {
 public:
  explicit DpRouter(const DpRouterOptions& opts);

  // The replica for `prompt` given each replica's load (load.size() == n_replicas).
  int32_t route(std::span<const TokenId> prompt, std::span<const int64_t> load);
  // Leading blocks of `prompt` remembered under replica r (for tests and logs).
  int32_t matched_blocks(std::span<const TokenId> prompt, int32_t r) const;
  int64_t n_blocks() const { return static_cast<int64_t>(blocks_.size()); }

 private:
  struct Block {
    uint64_t replicas = 0;  // bit r: sent to replica r
    std::list<uint64_t>::iterator lru;
  };
  // Chained hashes of prompt's whole blocks: h[k] covers tokens [0, (k + 1) * block_tokens).
  std::vector<uint64_t> block_hashes(std::span<const TokenId> prompt) const;
  void remember(const std::vector<uint64_t>& hashes, int32_t r);

  DpRouterOptions opts_;
  std::unordered_map<uint64_t, Block> blocks_;
  std::list<uint64_t> lru_;  // most recently used first
};

}  // namespace dss
