#include "apps/bench/dataset.h"

#include <algorithm>

#include "base/rng.h"

namespace dss::bench {

namespace {

bool is_space_word(std::string_view piece) {
  if (piece.size() < 3 || piece.size() > 13 || piece[0] != ' ') return false;
  return std::all_of(piece.begin() + 1, piece.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

int32_t uniform_int(Rng& rng, int32_t lo, int32_t hi) {  // inclusive
  const auto span = static_cast<uint64_t>(hi - lo + 1);
  return lo + static_cast<int32_t>(rng.next_u64() % span);
}

std::string text_of(const Tokenizer& tok, const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) s += tok.piece(id);
  return s;
}

}  // namespace

Result<WordVocab> WordVocab::from_tokenizer(const Tokenizer& tok) {
  WordVocab v;
  for (TokenId id = 0; id < tok.n_ids(); ++id) {
    if (!tok.is_valid_id(id) || tok.is_added(id) || !is_space_word(tok.piece(id))) continue;
    const std::vector<TokenId> back = tok.encode(tok.piece(id), EncodeOptions{false, false});
    if (back.size() == 1 && back[0] == id) v.ids_.push_back(id);
  }
  if (v.ids_.size() < 100)
    return Status::error("tokenizer: only ", v.ids_.size(),
                         " ' word' tokens found; cannot build exact-length prompts");
  return v;
}

Result<std::vector<PlannedRequest>> build_requests(const Tokenizer& tok, const WordVocab& vocab,
                                                   const DatasetOptions& o) {
  if (o.input_len < 1 || o.output_len < 1)
    return Status::error("--input-len and --output-len must be at least 1");
  if (!(o.range_ratio >= 0 && o.range_ratio < 1))
    return Status::error("--range-ratio must be in [0, 1)");
  auto bounds = [&](int32_t len) {
    const auto lo = static_cast<int32_t>(len * (1 - o.range_ratio));
    const auto hi = static_cast<int32_t>(len * (1 + o.range_ratio));
    return std::pair{std::max(lo, 1), std::max(hi, 1)};
  };
  const auto [in_lo, in_hi] = bounds(o.input_len);
  const auto [out_lo, out_hi] = bounds(o.output_len);
  if (in_lo - o.template_overhead < std::max(o.shared_prefix_len, 1))
    return Status::error("--input-len: the shortest prompt (", in_lo,
                         " tokens) must hold the chat template (", o.template_overhead,
                         " tokens), the shared prefix (", o.shared_prefix_len,
                         ") and at least one token");
  Rng rng(o.seed);
  const auto& words = vocab.ids();
  auto word = [&] { return words[rng.next_u64() % words.size()]; };
  std::vector<TokenId> prefix(static_cast<size_t>(o.shared_prefix_len));
  for (TokenId& id : prefix) id = word();
  std::vector<PlannedRequest> out;
  for (int32_t i = 0; i < o.n_requests; ++i) {
    PlannedRequest r;
    r.prompt_len = uniform_int(rng, in_lo, in_hi);
    r.max_tokens = uniform_int(rng, out_lo, out_hi);
    r.ids = prefix;
    while (static_cast<int64_t>(r.ids.size()) < r.prompt_len - o.template_overhead)
      r.ids.push_back(word());
    r.text = text_of(tok, r.ids);
    const size_t n_back = tok.encode(r.text, EncodeOptions{false, false}).size();
    if (n_back != r.ids.size())  // cannot happen for space-word tokens; checked, not assumed
      return Status::error("prompt ", i, ": ", r.ids.size(), " ids re-encode to ", n_back);
    out.push_back(std::move(r));
  }
  return out;
}

PlannedRequest probe_request(const Tokenizer& tok, const WordVocab& vocab, int32_t n) {
  PlannedRequest r;
  for (int32_t i = 0; i < n; ++i) r.ids.push_back(vocab.ids()[static_cast<size_t>(i)]);
  r.text = text_of(tok, r.ids);
  r.prompt_len = n;
  r.max_tokens = 1;
  return r;
}

}  // namespace dss::bench
