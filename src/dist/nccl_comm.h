// NcclComm: the communicator over device buffers, on NCCL (built only with DSS_CUDA).
//
// Satisfies `Communicator` (communicator.h) with device memory as the buffers' space (counts and
// displacements of all_to_all_v stay host arrays). Every operation is enqueued on the
// communicator's own CUDA stream (`stream()`) and returns without waiting, so results are ready
// in stream order: work on other streams must synchronise with it (an event, or
// cudaStreamSynchronize(stream())). barrier() is the exception: it waits until every rank has
// reached it and the stream has drained.
//
// NCCL has each operation but all_to_all_v, which is grouped ncclSend/ncclRecv per peer (zero
// counts skipped, a rank's own block included). Errors NCCL or CUDA report after start-up abort
// through DSS_CHECK with NCCL's error string; start-up failures are Result errors on every rank.
// One device per communicator (the one current when it was created); not thread-safe.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/status.h"
#include "dist/communicator.h"
#include "dist/mpi_comm.h"

namespace dss {

class NcclComm {
 public:
  // Collective over `boot`: every rank selects CUDA device `device` (its local GPU index), rank 0
  // makes the NCCL unique id and broadcasts it over `boot`, and every rank joins with boot's rank
  // and size. Errors (no such device, NCCL failing to start on any rank) are reported on every
  // rank, so no rank is left waiting for the others.
  static Result<NcclComm> create(MpiComm& boot, int device);

  NcclComm(NcclComm&& other) noexcept;
  NcclComm& operator=(NcclComm&& other) noexcept;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ~NcclComm();

  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }

  template <CommArithmetic T>
  void allreduce_sum(std::span<T> data) {
    allreduce_sum_raw(data.data(), data.size(), comm_dtype_of<T>());
  }

  template <CommElement T>
  void allgather(std::span<const T> send, std::span<T> recv) {
    check_allgather_sizes(send, recv, size_);
    check_allgather_buffers(send, recv, rank_);
    allgather_raw(send.data(), recv.data(), send.size(), comm_dtype_of<T>());
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

 private:
  NcclComm() = default;

  void allreduce_sum_raw(void* data, size_t n, CommDType t);
  void allgather_raw(const void* send, void* recv, size_t n, CommDType t);
  // send == nullptr: in place (the root's block of recv already holds its data).
  void gather_raw(const void* send, void* recv, size_t n, int root, CommDType t);
  void reduce_scatter_sum_raw(const void* send, void* recv, size_t n, CommDType t);
  void all_to_all_v_raw(const void* send, void* recv, const AllToAllLayout& layout, CommDType t);
  void broadcast_raw(void* data, size_t n, int root, CommDType t);
  void release();

  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int32_t* barrier_word_ = nullptr;  // one device int that barrier() reduces
  int rank_ = 0;
  int size_ = 0;
  int device_ = -1;
};

static_assert(Communicator<NcclComm>);

}  // namespace dss
