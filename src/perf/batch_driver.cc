#include "perf/batch_driver.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.h"
#include "base/rng.h"
#include "tensor/dtype.h"

namespace dss::perf {

BatchDriver::BatchDriver(const Model& model, int32_t n_seqs, int32_t max_len, int32_t max_new,
                         int32_t page_size, DType kv_dtype)
    : model_(model),
      n_seqs_(n_seqs),
      max_len_(max_len),
      max_new_(std::min(max_new, max_len)),
      page_size_(page_size),
      pages_per_seq_((max_len + page_size - 1) / page_size),
      kv_(model.make_kv_cache(model.kv_layout(page_size, kv_dtype),
                              n_seqs * ((max_len + page_size - 1) / page_size))),
      ws_(model.workspace(WorkspaceLimits{n_seqs * std::min(max_new, max_len), max_len, n_seqs,
                                          model.n_threads(), model.act_quant_fp8(), 1,
                                          model.has_mtp()})) {
  DSS_CHECK(n_seqs >= 1 && max_len >= 1 && max_new >= 1 && page_size >= 1);
  page_table_.resize(static_cast<size_t>(n_seqs_) * pages_per_seq_);
  for (size_t i = 0; i < page_table_.size(); ++i) page_table_[i] = static_cast<PageId>(i);
  logits_.resize(static_cast<size_t>(n_seqs_) * model.config().n_vocab);
  begin_.resize(static_cast<size_t>(n_seqs_) + 1);
  kv_len_.resize(static_cast<size_t>(n_seqs_));
  n_draft_.resize(static_cast<size_t>(n_seqs_));
  if (model.has_mtp())
    hidden_.resize(static_cast<size_t>(n_seqs_) * max_new_ * model.config().d_model);
}

// The batch of the arrays step / mtp_step filled.
ForwardBatch BatchDriver::batch(std::span<const TokenId> tokens) const {
  ForwardBatch b;
  b.tokens = tokens;
  b.positions = positions_;
  b.seq_token_begin = begin_;
  b.seq_kv_len = kv_len_;
  b.page_table = page_table_;
  b.max_pages = pages_per_seq_;
  b.kv_write_slots = slots_;
  b.logit_rows = rows_;
  return b;
}

const float* BatchDriver::step(std::span<const TokenId> tokens, int32_t n_new, bool verify) {
  DSS_CHECK(n_new >= 1 && n_new <= max_new_, "n_new=", n_new, " max_new=", max_new_);
  DSS_CHECK(static_cast<int64_t>(tokens.size()) == int64_t{n_seqs_} * n_new);
  DSS_CHECK(length_ + n_new <= max_len_, "length ", length_ + n_new, " > max_len ", max_len_);
  const size_t n_tok = tokens.size();
  positions_.resize(n_tok);
  slots_.resize(n_tok);
  rows_.resize(static_cast<size_t>(n_seqs_));
  for (int32_t s = 0; s < n_seqs_; ++s) {
    for (int32_t i = 0; i < n_new; ++i) {
      const int32_t pos = length_ + i;
      const size_t t = static_cast<size_t>(s) * n_new + i;
      positions_[t] = pos;
      const PageId page = page_table_[static_cast<size_t>(s) * pages_per_seq_ + pos / page_size_];
      slots_[t] = page * page_size_ + pos % page_size_;
    }
    begin_[static_cast<size_t>(s)] = s * n_new;
    kv_len_[static_cast<size_t>(s)] = length_ + n_new;
    rows_[static_cast<size_t>(s)] = s * n_new + n_new - 1;
  }
  begin_[static_cast<size_t>(n_seqs_)] = n_seqs_ * n_new;
  ForwardBatch b = batch(tokens);
  std::fill(n_draft_.begin(), n_draft_.end(), verify ? n_new - 1 : 0);
  b.seq_n_draft = n_draft_;
  model_.forward(b, kv_, ws_, logits_.data());
  length_ += n_new;
  last_new_ = n_new;
  return logits_.data();
}

const float* BatchDriver::mtp_step(std::span<const TokenId> tokens, int32_t n_new) {
  DSS_CHECK(model_.has_mtp() && n_new >= 1 && n_new <= last_new_, "n_new=", n_new);
  DSS_CHECK(static_cast<int64_t>(tokens.size()) == int64_t{n_seqs_} * n_new);
  const auto d = static_cast<size_t>(model_.config().d_model);
  const size_t n_tok = tokens.size();
  positions_.resize(n_tok);
  slots_.resize(n_tok);
  for (int32_t s = 0; s < n_seqs_; ++s) {
    for (int32_t i = 0; i < n_new; ++i) {
      const int32_t pos = length_ - n_new + i;
      const size_t t = static_cast<size_t>(s) * n_new + i;
      positions_[t] = pos;
      const PageId page = page_table_[static_cast<size_t>(s) * pages_per_seq_ + pos / page_size_];
      slots_[t] = page * page_size_ + pos % page_size_;
      const size_t src = static_cast<size_t>(s) * last_new_ + (last_new_ - n_new + i);
      std::copy_n(ws_.hidden.data() + src * d, d, hidden_.data() + t * d);
    }
    begin_[static_cast<size_t>(s)] = s * n_new;
    kv_len_[static_cast<size_t>(s)] = length_;
    rows_[static_cast<size_t>(s)] = s * n_new + n_new - 1;
  }
  begin_[static_cast<size_t>(n_seqs_)] = n_seqs_ * n_new;
  model_.mtp_forward(batch(tokens), hidden_, kv_, ws_, logits_.data(), {});
  return logits_.data();
}

void BatchDriver::fill_synthetic(int32_t length, uint64_t seed) {
  DSS_CHECK(length >= 0 && length <= max_len_, "length ", length, " > max_len ", max_len_);
  const KvLayout& y = kv_.layout();
  Rng rng(seed);
  std::vector<float> row(static_cast<size_t>(y.d_row()));
  for (int32_t s = 0; s < n_seqs_; ++s) {
    for (int32_t pos = 0; pos < length; ++pos) {
      const PageId page = page_table_[static_cast<size_t>(s) * pages_per_seq_ + pos / page_size_];
      const int32_t slot = page * page_size_ + pos % page_size_;
      for (int32_t l = 0; l < y.n_layers; ++l) {
        for (int32_t i = 0; i < y.d_latent + y.d_rope; ++i)
          row[static_cast<size_t>(i)] = rng.normal();
        if (y.d_index > 0) {
          float* k = row.data() + y.d_index_offset();
          for (int32_t i = 0; i < y.d_index; ++i)  // any code but the NaNs 0x7F / 0xFF
            k[i] = fp8e4m3_to_f32(static_cast<uint8_t>(rng.next_u64() % 0x7F) |
                                  static_cast<uint8_t>(rng.next_u64() & 0x80));
          k[y.d_index] = std::ldexp(1.0f, -static_cast<int>(rng.next_u64() % 4) - 6);
        }
        kv_.store(l, slot, row.data());
      }
    }
  }
  length_ = length;
}

void BatchDriver::truncate(int32_t length) {
  DSS_CHECK(length >= 0 && length <= length_);
  length_ = length;
}

}  // namespace dss::perf
