// MPI start-up (MpiRuntime) and the host-buffer communicator over it (MpiComm).
//
// A process makes one MpiRuntime (MPI_Init_thread ... MPI_Finalize), asks it for the world
// communicator, and splits sub-communicators from that (tensor-parallel groups, data-parallel
// groups). Started by mpirun the world has the launcher's ranks; started on its own the process
// is an OpenMPI singleton, a world of size 1 (docs/dist.md has the start-up cost).
//
// Errors: start-up problems (MPI already started or finalised, a thread level MPI cannot
// provide, a world of the wrong size) are Status/Result errors. After start-up every MPI error
// is an invariant violation: the communicators run with MPI_ERRORS_RETURN and abort through
// DSS_CHECK with the MPI function and MPI's error string.
//
// Lifetime: every MpiComm must be destroyed before its MpiRuntime (a split communicator frees
// its MPI handle in its destructor, which is an error after MPI_Finalize).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "dist/communicator.h"

namespace dss {

// MPI's thread support levels, in increasing order.
enum class MpiThreadLevel { kSingle = 0, kFunneled = 1, kSerialized = 2, kMultiple = 3 };
const char* mpi_thread_level_name(MpiThreadLevel level);

// MPI's text for an MPI error code ("MPI_ERR_TRUNCATE: message truncated", ...).
std::string mpi_error_string(int code);
// After start-up an MPI error is an invariant violation: aborts unless rc is MPI_SUCCESS, naming
// `what` (the MPI function) and MPI's text.
void check_mpi(int rc, const char* what);

class MpiComm;

class MpiRuntime {
 public:
  // Initialises MPI with MPI_Init_thread. `required` defaults to kSerialized: the forward pass
  // (and so every collective) runs on the engine thread, not on the thread that started MPI,
  // which kFunneled would forbid; calls stay one at a time. argc/argv may be null.
  // Errors: MPI already initialised or finalised in this process (MPI starts once per process),
  // MPI_Init_thread failing, or MPI providing less than `required`.
  static Result<std::unique_ptr<MpiRuntime>> start(int* argc, char*** argv,
                                                   MpiThreadLevel required);
  ~MpiRuntime();  // MPI_Finalize
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  // The level MPI_Init_thread reported (at least the required one).
  MpiThreadLevel provided() const { return provided_; }
  // Wall time MPI_Init_thread took (an OpenMPI singleton starts a helper daemon: see docs/dist.md).
  double init_seconds() const { return init_seconds_; }

  // MPI_COMM_WORLD. expected_size > 0: an error unless the world has exactly that many ranks
  // (the message gives both numbers, to show a launch that does not match the flags).
  Result<MpiComm> world(int expected_size = 0) const;

 private:
  MpiRuntime() = default;
  MpiThreadLevel provided_ = MpiThreadLevel::kSingle;
  double init_seconds_ = 0.0;
};

// A communicator over host buffers: MPI_COMM_WORLD or a communicator split from one.
// Satisfies `Communicator` (communicator.h); counts above INT_MAX elements per call (per peer for
// all_to_all_v) abort, as MPI's counts are int. No allocation per collective.
class MpiComm {
 public:
  MpiComm(MpiComm&& other) noexcept;
  MpiComm& operator=(MpiComm&& other) noexcept;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;
  ~MpiComm();  // frees a split communicator; the world is left to MPI_Finalize

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm handle() const { return comm_; }

  template <CommArithmetic T>
  void allreduce_sum(std::span<T> data) {
    allreduce_sum_raw(data.data(), data.size(), comm_dtype_of<T>());
  }

  template <CommElement T>
  void allgather(std::span<const T> send, std::span<T> recv) {
    check_allgather_sizes(send, recv, size_);
    const bool in_place = check_allgather_buffers(send, recv, rank_);
    allgather_raw(in_place ? nullptr : send.data(), recv.data(), send.size(), comm_dtype_of<T>());
  }

  template <CommElement T>
  void gather(std::span<const T> send, std::span<T> recv, int root) {
    const bool in_place = check_gather(send, recv, root, rank_, size_);
    gather_raw(in_place ? nullptr : send.data(), recv.data(), send.size(), root,
               comm_dtype_of<T>());
  }

  template <CommArithmetic T>
  void reduce_scatter_sum(std::span<const T> send, std::span<T> recv) {
    check_reduce_scatter_sizes(send, recv, size_);
    check_disjoint_buffers("reduce_scatter_sum", send, recv);
    reduce_scatter_sum_raw(send.data(), recv.data(), recv.size(), comm_dtype_of<T>());
  }

  template <CommElement T>
  void all_to_all_v(std::span<const T> send, std::span<T> recv, const AllToAllLayout& layout) {
    check_all_to_all_layout(layout, size_, send.size(), recv.size());
    check_disjoint_buffers("all_to_all_v", send, recv);
    all_to_all_v_raw(send.data(), recv.data(), layout, comm_dtype_of<T>());
  }

  template <CommElement T>
  void broadcast(std::span<T> data, int root) {
    broadcast_raw(data.data(), data.size(), root, comm_dtype_of<T>());
  }

  void barrier();

  // MPI_Comm_split: the ranks passing the same color (>= 0) form one communicator, ordered by
  // key (ties by rank in this one). Collective over this communicator.
  MpiComm split(int color, int key) const;

 private:
  friend class MpiRuntime;
  MpiComm(MPI_Comm comm, bool owned);

  void allreduce_sum_raw(void* data, size_t n, CommDType t);
  void allgather_raw(const void* send, void* recv, size_t n, CommDType t);
  // send == nullptr: in place (the root's block of recv already holds its data).
  void gather_raw(const void* send, void* recv, size_t n, int root, CommDType t);
  void reduce_scatter_sum_raw(const void* send, void* recv, size_t n, CommDType t);
  void all_to_all_v_raw(const void* send, void* recv, const AllToAllLayout& layout, CommDType t);
  void broadcast_raw(void* data, size_t n, int root, CommDType t);

  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;  // split communicators are freed by the destructor
  int rank_ = 0;
  int size_ = 0;
  // all_to_all_v's int counts and displacements (MPI_Alltoallv's types), sized once.
  std::vector<int> send_counts_, send_displs_, recv_counts_, recv_displs_;
};

static_assert(Communicator<MpiComm>);

}  // namespace dss
