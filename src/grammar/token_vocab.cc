#include "grammar/token_vocab.h"

#include <algorithm>

#include "base/check.h"
#include "text/tokenizer.h"

namespace dss::grammar {

TokenVocab::TokenVocab(std::vector<std::pair<TokenId, std::string>> tokens, int32_t n_vocab,
                       TokenId eos_id, std::vector<std::pair<TokenId, std::string>> controls)
    : n_vocab_(n_vocab), eos_id_(eos_id) {
  DSS_CHECK(eos_id >= 0 && eos_id < n_vocab, "eos_id=", eos_id, " n_vocab=", n_vocab);
  DSS_CHECK(controls.size() <= static_cast<size_t>(kMaxControls), "controls=", controls.size());
  std::vector<std::string> by_id(n_vocab);
  for (auto& [id, b] : tokens) {
    DSS_CHECK(id >= 0 && id < n_vocab && id != eos_id, "id=", id);
    // 0xFF is the control tokens' stand-in byte (see the header); no UTF-8 text has it.
    if (!b.empty() && b.find('\xFF') == std::string::npos) by_id[id] = std::move(b);
  }
  for (size_t k = 0; k < controls.size(); ++k) {
    const TokenId id = controls[k].first;
    DSS_CHECK(id >= 0 && id < n_vocab && id != eos_id && by_id[id].empty(), "control id=", id);
    by_id[id] = control_bytes(static_cast<int32_t>(k));
    control_texts_.push_back(std::move(controls[k].second));
  }
  bytes_begin_.push_back(0);
  for (TokenId id = 0; id < n_vocab; ++id) {
    bytes_ += by_id[id];
    bytes_begin_.push_back(static_cast<int32_t>(bytes_.size()));
    if (!by_id[id].empty()) sorted_ids_.push_back(id);
  }
  std::sort(sorted_ids_.begin(), sorted_ids_.end(), [&](TokenId a, TokenId b) {
    return by_id[a] != by_id[b] ? by_id[a] < by_id[b] : a < b;
  });
  // Preorder trie from the sorted strings: the path of open nodes is the previous string.
  byte_.push_back(0);
  depth_.push_back(0);
  end_.push_back(0);
  tok_begin_.push_back(0);
  n_here_.push_back(0);
  std::vector<int32_t> path = {0};  // open node at each depth
  std::string_view prev;
  for (size_t i = 0; i < sorted_ids_.size(); ++i) {
    std::string_view s = by_id[sorted_ids_[i]];
    size_t common = 0;
    while (common < s.size() && common < prev.size() && s[common] == prev[common]) ++common;
    for (size_t d = path.size() - 1; d > common; --d) end_[path[d]] = n_nodes() + 1;
    path.resize(common + 1);
    for (size_t d = common; d < s.size(); ++d) {
      const auto k = static_cast<int32_t>(byte_.size());
      byte_.push_back(static_cast<uint8_t>(s[d]));
      depth_.push_back(static_cast<int32_t>(d + 1));
      end_.push_back(0);
      tok_begin_.push_back(static_cast<int32_t>(i));
      n_here_.push_back(0);
      path.push_back(k);
    }
    n_here_[path.back()] += 1;
    max_depth_ = std::max(max_depth_, static_cast<int32_t>(s.size()));
    prev = s;
  }
  for (size_t d = path.size(); d-- > 0;) end_[path[d]] = static_cast<int32_t>(byte_.size());
  // Sentinel node: the end of every subtree that reaches the last node.
  byte_.push_back(0);
  depth_.push_back(0);
  end_.push_back(static_cast<int32_t>(byte_.size()));
  tok_begin_.push_back(static_cast<int32_t>(sorted_ids_.size()));
  n_here_.push_back(0);
}

std::shared_ptr<const TokenVocab> TokenVocab::from_tokenizer(
    const Tokenizer& tok, int32_t n_vocab, const std::vector<std::string>& control_tokens) {
  if (n_vocab == 0) n_vocab = tok.n_ids();
  DSS_CHECK(n_vocab >= tok.n_ids(), "n_vocab=", n_vocab, " n_ids=", tok.n_ids());
  std::vector<std::pair<TokenId, std::string>> tokens;
  for (TokenId id = 0; id < tok.n_ids(); ++id) {
    if (!tok.is_valid_id(id) || tok.is_added(id) || id == tok.eos_id()) continue;
    tokens.emplace_back(id, std::string(tok.piece(id)));
  }
  std::vector<std::pair<TokenId, std::string>> controls;
  for (const std::string& text : control_tokens) {
    std::optional<TokenId> id = tok.added_token_id(text);
    if (id && *id != tok.eos_id()) controls.emplace_back(*id, text);
  }
  return std::make_shared<const TokenVocab>(std::move(tokens), n_vocab, tok.eos_id(),
                                            std::move(controls));
}

std::optional<std::string> TokenVocab::control_literal(std::string_view text) const {
  for (size_t k = 0; k < control_texts_.size(); ++k)
    if (control_texts_[k] == text) return control_bytes(static_cast<int32_t>(k));
  return std::nullopt;
}

std::string_view TokenVocab::bytes(TokenId id) const {
  if (id < 0 || id >= n_vocab_) return {};
  return std::string_view(bytes_).substr(bytes_begin_[id], bytes_begin_[id + 1] - bytes_begin_[id]);
}

}  // namespace dss::grammar
