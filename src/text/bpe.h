// BpeModel: the byte-level BPE `model` section of tokenizer.json (vocab + ranked merges).
//
// Works on raw bytes: vocabulary strings are converted from the byte-level alphabet at load.
// encode_piece() starts from one symbol per byte and repeatedly merges the adjacent pair with
// the lowest merge rank (ties: leftmost first), exactly like Hugging Face `tokenizers` with
// dropout off, no unk token, no byte fallback and ignore_merges=false (the DeepSeek settings).
// Threading: immutable after load; all methods are const and safe to call concurrently.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "core/types.h"
#include "io/json.h"

namespace dss {

class BpeModel {
 public:
  // Builds from the JSON value of "model" (type "BPE"). Every single byte must be in the
  // vocabulary and every merge result must be a vocabulary entry.
  static Result<BpeModel> from_json(const Json& model);

  // Appends the ids of one pre-tokenized piece (non-empty raw bytes) to `out`.
  void encode_piece(std::string_view piece, std::vector<TokenId>& out) const;

  // Raw bytes of vocabulary entry `id`; empty if `id` is not a vocabulary id.
  std::string_view id_bytes(TokenId id) const;
  // Vocabulary id of exactly these raw bytes, or -1.
  TokenId find(std::string_view bytes) const;
  // One past the largest vocabulary id.
  int32_t n_ids() const { return static_cast<int32_t>(id_bytes_.size()); }

 private:
  struct MergeSlot {
    uint64_t key = ~uint64_t{0};  // (left << 32) | right; all ones = empty
    int32_t rank = 0;
    TokenId merged = 0;
  };
  // Returns the slot of pair (a, b), or nullptr when the pair never merges.
  const MergeSlot* find_merge(TokenId a, TokenId b) const;
  void insert_merge(TokenId a, TokenId b, int32_t rank, TokenId merged);
  void encode_small(std::string_view piece, std::vector<TokenId>& out) const;
  void encode_large(std::string_view piece, std::vector<TokenId>& out) const;

  std::vector<std::string> id_bytes_;               // [n_ids]
  std::unordered_map<std::string, TokenId> to_id_;  // raw bytes -> id
  TokenId byte_id_[256] = {};                       // id of each single byte
  std::vector<MergeSlot> merges_;                   // open addressing, power-of-two size
  uint64_t merge_mask_ = 0;
};

}  // namespace dss
