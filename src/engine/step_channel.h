// StepChannel: how the ranks of a tensor-parallel group run the same engine steps. Rank 0's
// engine plans every step (scheduler, radix cache, pages) and sends its ForwardBatch; the other
// ranks receive it and run the same forward on their shard of the model, their own copy of the
// latent cache written at the same slots, in lockstep (the forward's collectives pair up).
// Wire format, two broadcasts per step from rank 0: a header of kHeaderWords int32 words
// {kind, n_tokens, n_seqs, max_pages, n_logit_rows, 0...}, then the arrays back to back as int32
// words: tokens, positions, seq_token_begin, seq_kv_len, page_table, kv_write_slots, logit_rows,
// seq_n_draft (zeros when the batch has none).
// A stop is one header of kind kStop.
// Thread-safety: one thread per channel (the engine thread; MPI is started kSerialized).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/forward_batch.h"
#include "dist/mpi_comm.h"

namespace dss {

class StepChannel {
 public:
  // `max_words`: the largest payload a step can have (words reserved once, so sending and
  // receiving do not allocate).
  StepChannel(MpiComm& group, size_t max_words);

  // Payload words of a batch of n_tokens tokens, n_seqs sequences, max_pages pages per
  // sequence and n_logit_rows logit rows.
  static size_t payload_words(int64_t n_tokens, int64_t n_seqs, int64_t max_pages,
                              int64_t n_logit_rows);

  void send(const ForwardBatch& b);  // rank 0
  void send_stop();                  // rank 0: the others' receive returns nullopt
  // Other ranks: the next batch (views into this channel's buffer, valid until the next call),
  // or nullopt after a stop.
  std::optional<ForwardBatch> receive();

 private:
  static constexpr int32_t kStop = 0, kStep = 1;
  static constexpr size_t kHeaderWords = 8;
  MpiComm& group_;
  std::vector<int32_t> words_;
};

}  // namespace dss
