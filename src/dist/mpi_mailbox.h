// MpiMailbox: tagged byte messages between the ranks of a communicator, point to point, for
// control traffic that does not run in lockstep (the data-parallel front's requests, token
// events and statistics). It has its own communicator (MPI_Comm_dup), so its messages never
// match another mailbox's or a collective's.
//
// send() returns once MPI holds the message (MPI_Send: small messages go eagerly, a large one
// waits until the destination polls it). poll() never blocks: the next message from any rank, in
// order per sender (MPI's non-overtaking rule), or nullopt.
// Threading: one thread sends while another polls, or while other threads run collectives on
// other communicators, only under MPI_THREAD_MULTIPLE (the caller starts MPI with it); send() and
// poll() are each called by one thread at a time.
// Lifetime: destroyed before its MpiRuntime, like every MpiComm.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "dist/mpi_comm.h"

namespace dss {

class MpiMailbox {
 public:
  // Collective over `comm`.
  explicit MpiMailbox(const MpiComm& comm);
  ~MpiMailbox();
  MpiMailbox(const MpiMailbox&) = delete;
  MpiMailbox& operator=(const MpiMailbox&) = delete;

  struct Message {
    int source = 0;
    int tag = 0;
    std::vector<uint8_t> bytes;
  };

  int rank() const { return rank_; }
  int size() const { return size_; }
  // tag >= 0.
  void send(int dest, int tag, std::span<const uint8_t> bytes);
  std::optional<Message> poll();

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 0;
};

}  // namespace dss
