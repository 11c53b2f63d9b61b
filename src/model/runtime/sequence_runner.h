// SequenceRunner: one sequence through Model::forward with its own paged KV cache, for the CLI
// (`dsserve logits`) and the model tests. Prefill runs in chunks of at most `max_chunk` tokens
// (each chunk attends to everything cached before it); decode feeds one token at a time.
// Pages are handed out in reverse order so tests exercise non-contiguous page tables.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "model/runtime/model.h"

namespace dss {

class SequenceRunner {
 public:
  // on_logits(first_position, n_rows, logits [n_rows, n_vocab]) for each chunk.
  using LogitsFn = std::function<void(int32_t, int32_t, const float*)>;

  // kv_dtype: the cache's latent storage (kF32 | kBF16 | kF8E4M3; docs/kv_layout.md).
  SequenceRunner(const Model& model, int32_t max_len, int32_t page_size = 64,
                 int32_t max_chunk = 512, DType kv_dtype = DType::kF32);

  // Appends `tokens`; with all_logits, logits for every new position, else for the last only.
  void prefill(std::span<const TokenId> tokens, bool all_logits, const LogitsFn& on_logits,
               AttnPath path = AttnPath::kAuto);
  // Appends one token and returns its logits ([n_vocab], valid until the next call).
  const float* decode(TokenId token, AttnPath path = AttnPath::kAuto);
  int32_t length() const { return length_; }
  int32_t max_len() const { return max_len_; }
  void reset() { length_ = 0; }
  // Tests: record routing / index decisions of the following forward passes (nullptr: off).
  void set_trace(ForwardTrace* trace) { ws_.trace = trace; }
  // Workspace::routed_expert_reads of every forward pass so far.
  int64_t routed_expert_reads() const { return ws_.routed_expert_reads; }

 private:
  const float* step(std::span<const TokenId> tokens, bool all_logits, AttnPath path);

  const Model& model_;
  int32_t max_len_, page_size_, max_chunk_;
  int32_t length_ = 0;
  KvCache kv_;
  Workspace ws_;
  std::vector<PageId> pages_;
  std::vector<float> logits_;
  std::vector<int32_t> positions_, slots_, rows_;
};

}  // namespace dss
