#include "model/runtime/sequence_runner.h"

#include <algorithm>

#include "base/check.h"

namespace dss {

namespace {
int32_t n_pages_for(int32_t max_len, int32_t page_size) {
  return (max_len + page_size - 1) / page_size;
}
}  // namespace

SequenceRunner::SequenceRunner(const Model& model, int32_t max_len, int32_t page_size,
                               int32_t max_chunk, DType kv_dtype)
    : model_(model),
      max_len_(max_len),
      page_size_(page_size),
      max_chunk_(std::min(max_chunk, max_len)),
      kv_(model.make_kv_cache(model.kv_layout(page_size, kv_dtype),
                              n_pages_for(max_len, page_size))),
      ws_(model.workspace(WorkspaceLimits{std::min(max_chunk, max_len), max_len,
                                          std::min(max_chunk, max_len), model.n_threads(),
                                          model.act_quant_fp8()})) {
  const int32_t n = n_pages_for(max_len, page_size);
  for (int32_t i = 0; i < n; ++i) pages_.push_back(n - 1 - i);
  logits_.resize(static_cast<size_t>(max_chunk_) * model.config().n_vocab);
}

const float* SequenceRunner::step(std::span<const TokenId> tokens, bool all_logits, AttnPath path) {
  const auto n = static_cast<int32_t>(tokens.size());
  DSS_CHECK(n > 0 && n <= max_chunk_);
  DSS_CHECK(length_ + n <= max_len_, "sequence length ", length_ + n, " > max_len ", max_len_);
  positions_.resize(static_cast<size_t>(n));
  slots_.resize(static_cast<size_t>(n));
  rows_.clear();
  for (int32_t i = 0; i < n; ++i) {
    const int32_t pos = length_ + i;
    positions_[static_cast<size_t>(i)] = pos;
    slots_[static_cast<size_t>(i)] =
        pages_[static_cast<size_t>(pos / page_size_)] * page_size_ + pos % page_size_;
    if (all_logits || i == n - 1) rows_.push_back(i);
  }
  const int32_t begin[2] = {0, n};
  const int32_t kv_len[1] = {length_ + n};
  ForwardBatch b;
  b.tokens = tokens;
  b.positions = positions_;
  b.seq_token_begin = std::span<const int32_t>(begin, 2);
  b.seq_kv_len = std::span<const int32_t>(kv_len, 1);
  b.page_table = pages_;
  b.max_pages = static_cast<int32_t>(pages_.size());
  b.kv_write_slots = slots_;
  b.logit_rows = rows_;
  model_.forward(b, kv_, ws_, logits_.data(), path);
  length_ += n;
  return logits_.data();
}

void SequenceRunner::prefill(std::span<const TokenId> tokens, bool all_logits,
                             const LogitsFn& on_logits, AttnPath path) {
  size_t i = 0;
  while (i < tokens.size()) {
    const size_t n = std::min(tokens.size() - i, static_cast<size_t>(max_chunk_));
    const int32_t first = length_;
    const float* lg = step(tokens.subspan(i, n), all_logits, path);
    if (on_logits) {
      if (all_logits) {
        on_logits(first, static_cast<int32_t>(n), lg);
      } else if (i + n == tokens.size()) {
        on_logits(first + static_cast<int32_t>(n) - 1, 1, lg);
      }
    }
    i += n;
  }
}

const float* SequenceRunner::decode(TokenId token, AttnPath path) {
  const TokenId t[1] = {token};
  return step(std::span<const TokenId>(t, 1), false, path);
}

}  // namespace dss
