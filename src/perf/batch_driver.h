// BatchDriver: n_seqs sequences advanced together through Model::forward, for `dsserve
// bench-model`. Every step appends the same number of new tokens to each sequence in ONE forward
// (a batched prefill chunk or a batched decode step, as the engine's batches look) and asks for
// the logits of each sequence's last new token only.
//
// Ownership: owns one KvCache (sequence i has its own contiguous run of pages) and the Workspace
// sized for the largest step. Threading: one thread; not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/runtime/model.h"

namespace dss::perf {

class BatchDriver {
 public:
  // max_len: tokens each sequence holds at most; max_new: new tokens per sequence per step.
  BatchDriver(const Model& model, int32_t n_seqs, int32_t max_len, int32_t max_new,
              int32_t page_size, DType kv_dtype);

  // tokens: [n_seqs, n_new] row-major, sequence-major; 1 <= n_new <= max_new and
  // length() + n_new <= max_len. Returns the logits [n_seqs, n_vocab] (valid until the next step).
  // verify: each sequence's last n_new - 1 tokens are a draft being verified
  // (ForwardBatch::seq_n_draft: the absorbed MLA form, as the engine's verify steps).
  const float* step(std::span<const TokenId> tokens, int32_t n_new, bool verify = false);
  // The MTP module (the model has it) over the last n_new positions of every sequence, which the
  // last step computed, with that step's final-normed hidden states: n_new <= that step's n_new;
  // tokens [n_seqs, n_new] (each position's next token). Logits of each sequence's last row.
  const float* mtp_step(std::span<const TokenId> tokens, int32_t n_new);
  // Forgets everything after the first `length` tokens of every sequence (0: empty cache).
  void truncate(int32_t length);
  // Benchmarks only: makes every sequence `length` tokens long (<= max_len) by writing random
  // cache rows instead of running the model (latent, rope ~ N(0, 1); V3.2 indexer keys random
  // e4m3 values with power-of-two scales). Decode cost does not depend on the values, but the
  // V3.2 top-k selection of random keys is scattered uniformly over the context, where a real
  // prompt's may cluster: a figure measured on such a cache is a diagnostic, not a result.
  void fill_synthetic(int32_t length, uint64_t seed);
  int32_t length() const { return length_; }
  int32_t n_seqs() const { return n_seqs_; }
  // Workspace::routed_expert_reads of every step so far (fill_synthetic runs none).
  int64_t routed_expert_reads() const { return ws_.routed_expert_reads; }
  // Workspace::collective_bytes of every step so far (tensor parallel; 0 otherwise).
  int64_t collective_bytes() const { return ws_.collective_bytes; }

 private:
  ForwardBatch batch(std::span<const TokenId> tokens) const;

  const Model& model_;
  int32_t n_seqs_, max_len_, max_new_, page_size_, pages_per_seq_;
  int32_t length_ = 0;
  KvCache kv_;
  Workspace ws_;
  std::vector<PageId> page_table_;  // [n_seqs, pages_per_seq]
  std::vector<float> logits_;       // [n_seqs, n_vocab]
  std::vector<int32_t> positions_, slots_, rows_, begin_, kv_len_, n_draft_;
  std::vector<float> hidden_;  // mtp_step's input rows [n_seqs * n_new, d_model]
  int32_t last_new_ = 0;       // n_new of the last step
};

}  // namespace dss::perf
