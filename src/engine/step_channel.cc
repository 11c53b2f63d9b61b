#include "engine/step_channel.h"

#include <algorithm>
#include <array>
#include <span>

#include "base/check.h"

namespace dss {

StepChannel::StepChannel(MpiComm& group, size_t max_words) : group_(group) {
  words_.reserve(max_words);
}

size_t StepChannel::payload_words(int64_t n_tokens, int64_t n_seqs, int64_t max_pages,
                                  int64_t n_logit_rows) {
  return static_cast<size_t>(3 * n_tokens + 3 * n_seqs + 1 + n_seqs * max_pages + n_logit_rows);
}

void StepChannel::send(const ForwardBatch& b) {
  DSS_CHECK(group_.rank() == 0, "StepChannel::send on rank ", group_.rank());
  std::array<int32_t, kHeaderWords> h{kStep, b.n_tokens(), b.n_seqs(), b.max_pages,
                                      static_cast<int32_t>(b.logit_rows.size())};
  group_.broadcast(std::span<int32_t>(h), 0);
  const size_t n = payload_words(b.n_tokens(), b.n_seqs(), b.max_pages,
                                 static_cast<int64_t>(b.logit_rows.size()));
  DSS_CHECK(n <= words_.capacity(), "step of ", n, " words > channel's ", words_.capacity());
  DSS_CHECK(b.page_table.size() == static_cast<size_t>(b.n_seqs()) * b.max_pages, "page table of ",
            b.page_table.size(), " entries");
  words_.clear();
  for (const auto& part : {b.tokens, b.positions, b.seq_token_begin, b.seq_kv_len, b.page_table,
                           b.kv_write_slots, b.logit_rows})
    words_.insert(words_.end(), part.begin(), part.end());
  if (b.seq_n_draft.empty()) {
    words_.insert(words_.end(), static_cast<size_t>(b.n_seqs()), 0);
  } else {
    DSS_CHECK(b.seq_n_draft.size() == static_cast<size_t>(b.n_seqs()));
    words_.insert(words_.end(), b.seq_n_draft.begin(), b.seq_n_draft.end());
  }
  DSS_CHECK(words_.size() == n, "step payload of ", words_.size(), " words, ", n, " expected");
  group_.broadcast(std::span<int32_t>(words_), 0);
}

void StepChannel::send_stop() {
  std::array<int32_t, kHeaderWords> h{kStop};
  group_.broadcast(std::span<int32_t>(h), 0);
}

std::optional<ForwardBatch> StepChannel::receive() {
  DSS_CHECK(group_.rank() != 0, "StepChannel::receive on rank 0");
  std::array<int32_t, kHeaderWords> h{};
  group_.broadcast(std::span<int32_t>(h), 0);
  if (h[0] == kStop) return std::nullopt;
  DSS_CHECK(h[0] == kStep, "step header kind ", h[0]);
  const int32_t T = h[1], S = h[2], P = h[3], L = h[4];
  const size_t n = payload_words(T, S, P, L);
  DSS_CHECK(n <= words_.capacity(), "step of ", n, " words > channel's ", words_.capacity());
  words_.resize(n);
  group_.broadcast(std::span<int32_t>(words_), 0);
  size_t at = 0;
  auto take = [&](size_t k) {
    std::span<const int32_t> s(words_.data() + at, k);
    at += k;
    return s;
  };
  ForwardBatch b;
  b.tokens = take(static_cast<size_t>(T));
  b.positions = take(static_cast<size_t>(T));
  b.seq_token_begin = take(static_cast<size_t>(S) + 1);
  b.seq_kv_len = take(static_cast<size_t>(S));
  b.page_table = take(static_cast<size_t>(S) * static_cast<size_t>(P));
  b.max_pages = P;
  b.kv_write_slots = take(static_cast<size_t>(T));
  b.logit_rows = take(static_cast<size_t>(L));
  b.seq_n_draft = take(static_cast<size_t>(S));
  return b;
}

}  // namespace dss
