// LocalComm: the communicator of a world of one process (rank 0 of 1) over host buffers.
//
// Every collective is what it means for one rank: a sum over one rank is the identity, a gather
// or an exchange is a copy of this rank's own block, a broadcast from rank 0 leaves the data as
// it is. It satisfies `Communicator` (communicator.h) so the single-process server instantiates
// the same parallel code paths without linking or initialising MPI (it never calls an MPI
// function). Sizes are checked as for any other communicator (DSS_CHECK), so code that would
// break with more ranks because of a size mistake breaks here too.
#pragma once

#include <cstring>
#include <span>

#include "base/check.h"
#include "dist/communicator.h"

namespace dss {

class LocalComm {
 public:
  int rank() const { return 0; }
  int size() const { return 1; }

  template <CommArithmetic T>
  void allreduce_sum(std::span<T> /*data*/) {}

  template <CommElement T>
  void allgather(std::span<const T> send, std::span<T> recv) {
    check_allgather_sizes(send, recv, 1);
    check_allgather_buffers(send, recv, 0);
    copy(send.data(), recv.data(), send.size());
  }

  template <CommElement T>
  void gather(std::span<const T> send, std::span<T> recv, int root) {
    check_gather(send, recv, root, 0, 1);
    copy(send.data(), recv.data(), send.size());
  }

  template <CommArithmetic T>
  void reduce_scatter_sum(std::span<const T> send, std::span<T> recv) {
    check_reduce_scatter_sizes(send, recv, 1);
    check_disjoint_buffers("reduce_scatter_sum", send, recv);
    copy(send.data(), recv.data(), send.size());
  }

  template <CommElement T>
  void all_to_all_v(std::span<const T> send, std::span<T> recv, const AllToAllLayout& layout) {
    check_all_to_all_layout(layout, 1, send.size(), recv.size());
    check_disjoint_buffers("all_to_all_v", send, recv);
    DSS_CHECK(layout.send_counts[0] == layout.recv_counts[0], "all_to_all_v: rank 0 sends ",
              layout.send_counts[0], " elements to itself but expects ", layout.recv_counts[0]);
    copy(send.data() + layout.send_displs[0], recv.data() + layout.recv_displs[0],
         static_cast<size_t>(layout.send_counts[0]));
  }

  template <CommElement T>
  void broadcast(std::span<T> /*data*/, int root) {
    DSS_CHECK(root == 0, "broadcast: root ", root, " out of range for 1 rank");
  }

  void barrier() {}

  // The communicator of the ranks that pass the same color, ordered by key: here always this one.
  LocalComm split(int color, int /*key*/) const {
    DSS_CHECK(color >= 0, "split: color must be >= 0, got ", color);
    return LocalComm{};
  }

 private:
  template <typename T>
  static void copy(const T* from, T* to, size_t n) {
    if (n > 0 && from != to) std::memcpy(to, from, n * sizeof(T));
  }
};

static_assert(Communicator<LocalComm>);

}  // namespace dss
