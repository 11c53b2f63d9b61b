#include "sched/ngram_draft.h"

#include <algorithm>

namespace dss {

int32_t ngram_draft(std::span<const TokenId> tokens, int32_t n_min, int32_t n_max,
                    std::span<TokenId> out) {
  const auto L = static_cast<int64_t>(tokens.size());
  for (int64_t n = std::min<int64_t>(n_max, L - 1); n >= std::max(1, n_min); --n) {
    const std::span<const TokenId> tail = tokens.subspan(static_cast<size_t>(L - n));
    // Occurrences ending before the tail's start, latest first: [s, s + n) with s + n < L.
    for (int64_t s = L - n - 1; s >= 0; --s) {
      if (!std::equal(tail.begin(), tail.end(), tokens.begin() + s)) continue;
      const int64_t from = s + n;
      const auto k =
          static_cast<int32_t>(std::min<int64_t>(static_cast<int64_t>(out.size()), L - from));
      std::copy_n(tokens.begin() + from, k, out.begin());
      return k;
    }
  }
  return 0;
}

}  // namespace dss
