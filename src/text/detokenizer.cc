#include "text/detokenizer.h"

#include "text/utf8.h"

namespace dss {

std::string IncrementalDetokenizer::push(TokenId id) {
  if (skip_special_ && tok_->is_special(id)) return {};
  pending_.append(tok_->piece(id));
  size_t n = utf8_complete_prefix(pending_);
  if (n == 0) return {};
  std::string out = utf8_lossy(std::string_view(pending_).substr(0, n));
  pending_.erase(0, n);
  return out;
}

std::string IncrementalDetokenizer::finish() {
  std::string out = utf8_lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace dss
