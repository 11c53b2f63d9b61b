#include "text/added_tokens.h"

#include <cstring>

namespace dss {

void AddedTokens::add(AddedToken token) {
  if (token.content.empty()) return;
  if (terminal_.empty()) terminal_.push_back(-1);  // root
  int32_t node = 0;
  for (char ch : token.content) {
    uint8_t b = static_cast<uint8_t>(ch);
    uint64_t key = (static_cast<uint64_t>(node) << 8) | b;
    auto it = edges_.find(key);
    if (it == edges_.end()) {
      int32_t fresh = static_cast<int32_t>(terminal_.size());
      terminal_.push_back(-1);
      it = edges_.emplace(key, fresh).first;
    }
    node = it->second;
  }
  first_byte_[static_cast<uint8_t>(token.content[0])] = true;
  if (terminal_[node] >= 0) return;  // duplicate content: the first definition wins
  terminal_[node] = static_cast<int32_t>(tokens_.size());
  by_id_[token.id] = tokens_.size();
  tokens_.push_back(std::move(token));
}

int32_t AddedTokens::child(int32_t node, uint8_t b) const {
  auto it = edges_.find((static_cast<uint64_t>(node) << 8) | b);
  return it == edges_.end() ? -1 : it->second;
}

size_t AddedTokens::find(std::string_view text, size_t from, TokenId& id, size_t& len) const {
  if (tokens_.empty()) return std::string_view::npos;
  for (size_t i = from; i < text.size(); ++i) {
    if (!first_byte_[static_cast<uint8_t>(text[i])]) continue;
    int32_t node = 0, best = -1;
    size_t best_len = 0;
    for (size_t k = i; k < text.size(); ++k) {
      node = child(node, static_cast<uint8_t>(text[k]));
      if (node < 0) break;
      if (terminal_[node] >= 0) {
        best = terminal_[node];
        best_len = k - i + 1;
      }
    }
    if (best >= 0) {
      id = tokens_[best].id;
      len = best_len;
      return i;
    }
  }
  return std::string_view::npos;
}

const AddedToken* AddedTokens::by_id(TokenId id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedTokens::by_content(std::string_view content) const {
  int32_t node = terminal_.empty() ? -1 : 0;
  for (size_t k = 0; k < content.size() && node >= 0; ++k) {
    node = child(node, static_cast<uint8_t>(content[k]));
  }
  if (node < 0 || content.empty() || terminal_[node] < 0) return nullptr;
  return &tokens_[terminal_[node]];
}

}  // namespace dss
