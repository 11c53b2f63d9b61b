#include "sched/dp_router.h"

#include <algorithm>

#include "base/check.h"

namespace dss {

namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace

DpRouter::DpRouter(const DpRouterOptions& opts) : opts_(opts) {
  DSS_CHECK(opts.n_replicas >= 1 && opts.n_replicas <= 64, "n_replicas=", opts.n_replicas);
  DSS_CHECK(opts.block_tokens >= 1 && opts.max_blocks >= 1, "block_tokens=", opts.block_tokens,
            " max_blocks=", opts.max_blocks);
}

std::vector<uint64_t> DpRouter::block_hashes(std::span<const TokenId> prompt) const {
  const size_t b = static_cast<size_t>(opts_.block_tokens);
  std::vector<uint64_t> out;
  out.reserve(prompt.size() / b);
  uint64_t h = 0x6a09e667f3bcc909ULL;
  for (size_t k = 0; (k + 1) * b <= prompt.size(); ++k) {
    for (size_t i = k * b; i < (k + 1) * b; ++i)
      h = mix(h ^
              (static_cast<uint64_t>(static_cast<uint32_t>(prompt[i])) + 0x9e3779b97f4a7c15ULL));
    out.push_back(h);
  }
  return out;
}

int32_t DpRouter::matched_blocks(std::span<const TokenId> prompt, int32_t r) const {
  const std::vector<uint64_t> hs = block_hashes(prompt);
  int32_t n = 0;
  for (uint64_t h : hs) {
    auto it = blocks_.find(h);
    if (it == blocks_.end() || !((it->second.replicas >> r) & 1)) break;
    ++n;
  }
  return n;
}

int32_t DpRouter::route(std::span<const TokenId> prompt, std::span<const int64_t> load) {
  const int32_t n = opts_.n_replicas;
  DSS_CHECK(static_cast<int32_t>(load.size()) == n, "load has ", load.size(), " entries for ", n,
            " replicas");
  const std::vector<uint64_t> hs = block_hashes(prompt);
  // match[r]: the walk stops for a replica at its first missing block.
  std::vector<int32_t> match(static_cast<size_t>(n), 0);
  uint64_t alive = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  for (size_t k = 0; k < hs.size() && alive != 0; ++k) {
    auto it = blocks_.find(hs[k]);
    alive &= it == blocks_.end() ? 0 : it->second.replicas;
    for (int32_t r = 0; r < n; ++r)
      if ((alive >> r) & 1) match[static_cast<size_t>(r)] = static_cast<int32_t>(k) + 1;
  }
  int32_t least = 0, cached = 0;
  for (int32_t r = 1; r < n; ++r) {
    const auto ur = static_cast<size_t>(r);
    if (load[ur] < load[static_cast<size_t>(least)]) least = r;
    const int32_t mr = match[ur], mc = match[static_cast<size_t>(cached)];
    if (mr > mc || (mr == mc && load[ur] < load[static_cast<size_t>(cached)])) cached = r;
  }
  const int64_t hit_tokens =
      static_cast<int64_t>(match[static_cast<size_t>(cached)]) * opts_.block_tokens;
  const bool use_cache =
      hit_tokens > 0 && hit_tokens >= opts_.min_match_tokens &&
      load[static_cast<size_t>(cached)] - load[static_cast<size_t>(least)] <= opts_.max_imbalance;
  const int32_t chosen = use_cache ? cached : least;
  remember(hs, chosen);
  return chosen;
}

// Deepest block first, so a prompt's first block ends up the most recently used: eviction takes
// the deep ends of old prompts before the shared short prefixes (system prompts) they start with.
void DpRouter::remember(const std::vector<uint64_t>& hashes, int32_t r) {
  for (auto h_it = hashes.rbegin(); h_it != hashes.rend(); ++h_it) {
    const uint64_t h = *h_it;
    auto [it, added] = blocks_.try_emplace(h);
    if (!added) lru_.erase(it->second.lru);
    lru_.push_front(h);
    it->second.lru = lru_.begin();
    it->second.replicas |= uint64_t{1} << r;
  }
  while (static_cast<int64_t>(blocks_.size()) > opts_.max_blocks) {
    blocks_.erase(lru_.back());
    lru_.pop_back();
  }
}

}  // namespace dss
