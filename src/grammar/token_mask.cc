#include "grammar/token_mask.h"

#include <utility>

namespace dss::grammar {

MaskSet MaskSet::from_ids(std::vector<TokenId> ids, int32_t n_words) {
  MaskSet m;
  // A list costs 4 bytes per id, the bits 8 per word: keep whichever is smaller.
  if (ids.size() * 4 > static_cast<size_t>(n_words) * 8) {
    m.bits.assign(n_words, 0);
    for (TokenId id : ids) mask_set(m.bits, id);
  } else {
    m.ids = std::move(ids);
  }
  return m;
}

MaskSet MaskSet::from_words(std::span<const uint64_t> words) {
  MaskSet m;
  size_t count = 0;
  for (uint64_t w : words) count += static_cast<size_t>(__builtin_popcountll(w));
  if (count * 4 > words.size() * 8) {
    m.bits.assign(words.begin(), words.end());
    return m;
  }
  m.ids.reserve(count);
  for (size_t w = 0; w < words.size(); ++w) {
    for (uint64_t b = words[w]; b; b &= b - 1) {
      m.ids.push_back(static_cast<TokenId>(w * 64 + __builtin_ctzll(b)));
    }
  }
  return m;
}

void MaskSet::merge_into(std::span<uint64_t> words) const {
  if (!bits.empty()) {
    for (size_t i = 0; i < bits.size(); ++i) words[i] |= bits[i];
  } else {
    for (TokenId id : ids) mask_set(words, id);
  }
}

}  // namespace dss::grammar
