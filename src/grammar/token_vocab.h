// TokenVocab: the vocabulary as the grammar engine sees it: each token's bytes, and a byte trie
// of all grammar-eligible tokens laid out in preorder so a mask walk visits a shared prefix once
// and skips a rejected prefix's whole subtree in one jump.
//
// Eligible tokens are those with a non-empty byte string that are not added tokens (special and
// control tokens such as <｜tool▁calls▁begin｜> are never produced by a grammar). Ids in
// [n_ids, n_vocab) (padding rows of the model's embedding) are never allowed. The EOS id is
// allowed by the matcher exactly when the grammar can end.
// Threading: immutable after construction.
#pragma once

#include <cstdint>
#include <memory>
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
  TokenVocab(std::vector<std::pair<TokenId, std::string>> tokens, int32_t n_vocab, TokenId eos_id);
  // Every non-added token of `tok`; n_vocab is the model's vocabulary (>= tok.n_ids(); 0 means
  // tok.n_ids()).
  static std::shared_ptr<const TokenVocab> from_tokenizer(const Tokenizer& tok,
                                                          int32_t n_vocab = 0);

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
  std::vector<TokenId> sorted_ids_;  // eligible ids in byte-lexicographic order
};

}  // namespace dss::grammar
