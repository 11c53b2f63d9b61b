// TokenVocab: the vocabulary as the grammar engine sees it: each token's bytes, and a byte trie
// of all grammar-eligible tokens laid out in preorder so a mask walk visits a shared prefix once
// and skips a rejected prefix's whole subtree in one jump.
//
// Eligible tokens are those with a non-empty byte string that are not added tokens (special and
// control tokens such as <｜tool▁calls▁begin｜> are never produced by a grammar). Ids in
// [n_ids, n_vocab) (padding rows of the model's embedding) are never allowed. The EOS id is
// allowed by the matcher exactly when the grammar can end.
//
// Control tokens: chosen added tokens (the tool-call markers <｜tool▁calls▁begin｜> ...) that a
// grammar may produce as themselves. Each gets the 2-byte stand-in control_bytes(k) = 0xFF, k
// (k = its index in the list) as its "bytes", and a grammar writes control_literal(text) where
// the token must appear. No UTF-8 text contains 0xFF and no front end (JSON Schema, regex, GBNF)
// produces it, so ordinary tokens with a 0xFF byte are left out of the trie: only the control
// token itself can match its stand-in, never the same text spelled with ordinary tokens.
// Threading: immutable after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/types.h"

namespace dss {
class Tokenizer;
}

namespace dss::grammar {

class TokenVocab {
 public:
  // `tokens`: (id, bytes) of every eligible token; ids < n_vocab, eos_id < n_vocab.
  // `controls`: (id, text) of the control tokens (at most kMaxControls; ids distinct from
  // `tokens`' and from eos_id).
  TokenVocab(std::vector<std::pair<TokenId, std::string>> tokens, int32_t n_vocab, TokenId eos_id,
             std::vector<std::pair<TokenId, std::string>> controls = {});
  // Every non-added token of `tok`, plus those of `control_tokens` (added-token texts) that `tok`
  // has; n_vocab is the model's vocabulary (>= tok.n_ids(); 0 means tok.n_ids()).
  static std::shared_ptr<const TokenVocab> from_tokenizer(
      const Tokenizer& tok, int32_t n_vocab = 0,
      const std::vector<std::string>& control_tokens = {});

  static constexpr int32_t kMaxControls = 64;
  static std::string control_bytes(int32_t k) { return std::string{'\xFF', static_cast<char>(k)}; }
  // The stand-in bytes of the control token whose text is `text`; nullopt if it is not one.
  std::optional<std::string> control_literal(std::string_view text) const;

  int32_t n_vocab() const { return n_vocab_; }
  int32_t n_words() const { return (n_vocab_ + 63) / 64; }  // uint64 words of a mask
  TokenId eos_id() const { return eos_id_; }
  // Bytes of an eligible token; empty for any other id.
  std::string_view bytes(TokenId id) const;

  // The trie, preorder. Node 0 is the root (no byte); every other node k has a byte, a depth
  // >= 1, and its subtree is [k, subtree_end(k)). Tokens ending at node k are
  // sorted_ids()[tok_begin(k) .. tok_begin(k) + n_here(k)); those of the subtree end at
  // tok_begin(subtree_end(k)) (node n_nodes() is a sentinel).
  int32_t n_nodes() const { return static_cast<int32_t>(byte_.size()) - 1; }
  uint8_t node_byte(int32_t k) const { return byte_[k]; }
  int32_t node_depth(int32_t k) const { return depth_[k]; }
  int32_t subtree_end(int32_t k) const { return end_[k]; }
  int32_t tok_begin(int32_t k) const { return tok_begin_[k]; }
  int32_t n_here(int32_t k) const { return n_here_[k]; }
  int32_t max_depth() const { return max_depth_; }
  const std::vector<TokenId>& sorted_ids() const { return sorted_ids_; }

 private:
  int32_t n_vocab_;
  TokenId eos_id_;
  std::vector<int32_t> bytes_begin_;  // [n_vocab + 1] into bytes_
  std::string bytes_;
  std::vector<uint8_t> byte_;
  std::vector<int32_t> depth_, end_, tok_begin_, n_here_;  // [n_nodes + 1]
  int32_t max_depth_ = 0;
  std::vector<TokenId> sorted_ids_;         // eligible ids in byte-lexicographic order
  std::vector<std::string> control_texts_;  // [n_controls] text of control token k
};

}  // namespace dss::grammar
