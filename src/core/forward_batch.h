// ForwardBatch: the struct-of-arrays hand-off between the scheduler and the model.
//
// A step runs n_seqs sequences; sequence i contributes the tokens
// [seq_token_begin[i], seq_token_begin[i+1]) of `tokens`, which are its newest tokens at
// consecutive positions ending at seq_kv_len[i] - 1 (so a prefill chunk on top of cached tokens
// and a single decode token look the same). Every token's KV is written at kv_write_slots[t]
// (= page * page_size + offset) before attention reads it. Logits are produced only for the
// tokens listed in logit_rows, in that order.
#pragma once

#include <cstdint>
#include <span>

#include "core/types.h"

namespace dss {

struct ForwardBatch {
  std::span<const TokenId> tokens;           // [n_tokens]
  std::span<const int32_t> positions;        // [n_tokens]
  std::span<const int32_t> seq_token_begin;  // [n_seqs + 1]  prefix sums over tokens
  std::span<const int32_t> seq_kv_len;       // [n_seqs]      tokens already in cache + new
  std::span<const PageId> page_table;        // [n_seqs, max_pages] row-major, padded with kNoPage
  int32_t max_pages = 0;                     // row stride of page_table
  std::span<const int32_t> kv_write_slots;   // [n_tokens]    page * page_size + offset
  std::span<const int32_t> logit_rows;       // [n_out]       which tokens need logits
  // [n_seqs] or empty (all 0): speculative decoding's draft tokens at the end of each
  // sequence's tokens. A sequence with drafts is a decode verifying them: its attention takes
  // the absorbed MLA form as a one-token decode does (model/deepseek/mla.h), so each verified row
  // is computed as that decode would compute it.
  std::span<const int32_t> seq_n_draft;

  int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t n_seqs() const { return static_cast<int32_t>(seq_kv_len.size()); }
};

}  // namespace dss
