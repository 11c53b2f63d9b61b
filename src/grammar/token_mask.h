// Token masks: one bit per vocabulary id (bit id % 64 of word id / 64), 1 = allowed.
// MaskSet stores one mask compactly: a list of allowed ids when there are few, else the bits.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/types.h"

namespace dss::grammar {

inline void mask_set(std::span<uint64_t> words, TokenId id) {
  words[id >> 6] |= uint64_t{1} << (id & 63);
}
inline bool mask_test(std::span<const uint64_t> words, TokenId id) {
  return (words[id >> 6] >> (id & 63)) & 1;
}

struct MaskSet {
  std::vector<uint64_t> bits;  // [n_words] when dense, else empty
  std::vector<TokenId> ids;    // allowed ids when sparse

  // Builds from allowed ids (any order).
  static MaskSet from_ids(std::vector<TokenId> ids, int32_t n_words);
  static MaskSet from_words(std::span<const uint64_t> words);
  // ORs this set into `words`.
  void merge_into(std::span<uint64_t> words) const;
  size_t bytes() const { return bits.size() * 8 + ids.size() * 4; }
};

}  // namespace dss::grammar
