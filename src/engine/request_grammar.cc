#include "engine/request_grammar.h"

#include <algorithm>
#include <utility>

#include "grammar/token_mask.h"

namespace dss {

RequestGrammar::RequestGrammar(std::shared_ptr<grammar::CompiledGrammar> grammar,
                               TokenId reasoning_end_token, std::string reasoning_end_text)
    : matcher_(std::move(grammar)),
      gated_(reasoning_end_token >= 0 || !reasoning_end_text.empty()),
      end_token_(reasoning_end_token),
      end_text_(std::move(reasoning_end_text)) {}

bool RequestGrammar::fill_mask(std::span<uint64_t> words) {
  if (!gated_) {
    matcher_.fill_next_token_bitmask(words);
    return std::any_of(words.begin(), words.end(), [](uint64_t w) { return w != 0; });
  }
  const grammar::TokenVocab& vocab = matcher_.grammar().vocab();
  const int32_t n_vocab = vocab.n_vocab();
  std::fill(words.begin(), words.end(), ~uint64_t{0});
  if (n_vocab % 64 != 0) words[words.size() - 1] = (uint64_t{1} << (n_vocab % 64)) - 1;
  const TokenId eos = vocab.eos_id();
  words[static_cast<size_t>(eos) >> 6] &= ~(uint64_t{1} << (eos & 63));
  return true;
}

Status RequestGrammar::accept(TokenId token) {
  if (!gated_) return matcher_.accept_token(token);
  if (token == end_token_) {
    gated_ = false;
    return Status::ok();
  }
  if (end_text_.empty()) return Status::ok();
  const std::string_view bytes = matcher_.grammar().vocab().bytes(token);
  if (bytes.empty()) {  // an added token: not part of the text the end marker is searched in
    tail_.clear();
    return Status::ok();
  }
  tail_.append(bytes);
  const size_t at = tail_.find(end_text_);
  if (at == std::string::npos) {
    const size_t keep = std::min(tail_.size(), end_text_.size() - 1);
    tail_.erase(0, tail_.size() - keep);
    return Status::ok();
  }
  // The marker ends inside this token: what follows it is the first output under the grammar.
  gated_ = false;
  const std::string rest = tail_.substr(at + end_text_.size());
  tail_.clear();
  if (rest.empty()) return Status::ok();
  return matcher_.accept_bytes(rest);
}

}  // namespace dss
