// AddedTokens: the `added_tokens` of tokenizer.json (special and control tokens such as
// `<｜User｜>`, `<｜tool▁sep｜>`). They are cut out of the text before pre-tokenization, by a
// leftmost-longest exact byte match, and become single ids. Text that only looks similar (ASCII
// `|` instead of U+FF5C `｜`, `_` instead of U+2581 `▁`) is not matched and goes through BPE.
// Threading: immutable after load; const methods are safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/types.h"

namespace dss {

struct AddedToken {
  TokenId id = -1;
  std::string content;   // raw UTF-8 text of the token
  bool special = false;  // tokenizer.json "special": hidden by decode(skip_special)
};

class AddedTokens {
 public:
  void add(AddedToken token);

  // Finds the leftmost-longest token occurrence in text[from..]; returns its position and
  // sets `id`/`len`, or returns npos.
  size_t find(std::string_view text, size_t from, TokenId& id, size_t& len) const;

  const AddedToken* by_id(TokenId id) const;
  const AddedToken* by_content(std::string_view content) const;
  const std::vector<AddedToken>& all() const { return tokens_; }
  bool empty() const { return tokens_.empty(); }

 private:
  // Trie over bytes: node -> child by (node << 8 | byte).
  int32_t child(int32_t node, uint8_t b) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<TokenId, size_t> by_id_;
  std::unordered_map<uint64_t, int32_t> edges_;
  std::vector<int32_t> terminal_;  // per node: index into tokens_ or -1
  bool first_byte_[256] = {};
};

}  // namespace dss
