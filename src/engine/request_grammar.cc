#include "engine/request_grammar.h"

#include <algorithm>
#include <utility>

#include "grammar/token_mask.h"

namespace dss {

RequestGrammar::RequestGrammar(std::shared_ptr<grammar::CompiledGrammar> grammar,
                               std::vector<GrammarGate> gates)
    : matcher_(std::move(grammar)) {
  for (GrammarGate& g : gates)
    if (g.token >= 0 || !g.text.empty()) gates_.push_back(std::move(g));
}

bool RequestGrammar::fill_mask(std::span<uint64_t> words) {
  if (!gated()) {
    matcher_.fill_next_token_bitmask(words);
    return std::any_of(words.begin(), words.end(), [](uint64_t w) { return w != 0; });
  }
  const grammar::TokenVocab& vocab = matcher_.grammar().vocab();
  const int32_t n_vocab = vocab.n_vocab();
  std::fill(words.begin(), words.end(), ~uint64_t{0});
  if (n_vocab % 64 != 0) words[words.size() - 1] = (uint64_t{1} << (n_vocab % 64)) - 1;
  if (!gates_[next_gate_].allow_eos) {
    const TokenId eos = vocab.eos_id();
    words[static_cast<size_t>(eos) >> 6] &= ~(uint64_t{1} << (eos & 63));
  }
  return true;
}

Status RequestGrammar::accept(TokenId token) {
  if (!gated()) return matcher_.accept_token(token);
  if (token == gates_[next_gate_].token) {
    ++next_gate_;
    tail_.clear();
    return Status::ok();
  }
  const std::string_view bytes = matcher_.grammar().vocab().bytes(token);
  if (bytes.empty()) {  // an added token: not part of the text the markers are searched in
    tail_.clear();
    return Status::ok();
  }
  return accept_gated_bytes(bytes);
}

Status RequestGrammar::accept_gated_bytes(std::string_view bytes) {
  const std::string& text = gates_[next_gate_].text;
  if (text.empty()) return Status::ok();
  tail_.append(bytes);
  const size_t at = tail_.find(text);
  if (at == std::string::npos) {
    const size_t keep = std::min(tail_.size(), text.size() - 1);
    tail_.erase(0, tail_.size() - keep);
    return Status::ok();
  }
  // The marker ends inside this token: what follows it belongs to the next gate or the grammar.
  ++next_gate_;
  const std::string rest = tail_.substr(at + text.size());
  tail_.clear();
  if (rest.empty()) return Status::ok();
  if (gated()) return accept_gated_bytes(rest);
  return matcher_.accept_bytes(rest);
}

}  // namespace dss
