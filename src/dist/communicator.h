// The collective operations a parallel forward pass needs (tensor, expert and data parallelism),
// as the C++20 concept `Communicator`, and the element types they move.
//
// Implementations: LocalComm (local_comm.h, one process, never touches MPI), MpiComm
// (mpi_comm.h, host buffers over MPI), NcclComm (nccl_comm.h, device buffers over NCCL; only with
// DSS_CUDA). docs/dist.md describes the set and how the tests run it under mpirun.
//
// Why a concept rather than an interface class with virtual functions: the forward pass calls a
// collective after every sharded layer, and the layers are already templates over the backend
// (backend/backend.h, `ModelBackend`), instantiated once per concrete backend. A communicator
// type chosen the same way (a template parameter next to the backend) costs a direct call per
// collective and lets the per-type wrappers below inline into the caller; a process that runs
// alone instantiates LocalComm and pays nothing, not even an MPI library call. The price is that
// the choice of communicator is made at compile time per instantiation, which is what the
// backend already does.
//
// Contract of every operation (all implementations):
//   - Collective: every rank of the communicator calls the same operations in the same order
//     with matching sizes and the same root; a rank that skips one leaves the others blocked.
//   - Buffers live in the communicator's memory space: host memory for LocalComm and MpiComm,
//     device memory for NcclComm. Counts and displacements are always host arrays.
//   - Sizes are element counts of T. A mismatch the calling rank can see (a buffer that is not
//     size() times another, a displacement past the end, a root out of range) is a programmer
//     error and aborts through DSS_CHECK; so does any error the transport reports after start-up
//     (the message names the operation and carries the transport's error string). Problems at
//     start-up (MPI missing or a world of the wrong size) are Status/Result errors instead.
//   - A send buffer and a receive buffer must not overlap, except that allgather may run in
//     place: its send may be exactly recv's block of this rank (recv.subspan(rank() * n, n)).
//   - Sums are element-wise. Integer sums must not overflow. Float sums may be associated in any
//     order (the order can change with the number of ranks), but every rank receives the same
//     bits.
//   - Threading: a communicator object is used by one thread at a time (the thread that runs the
//     forward pass); it is not thread-safe.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/check.h"

namespace dss {

// Element types a collective moves. Reductions take the arithmetic ones only.
enum class CommDType : uint8_t { kF32, kF64, kI32, kI64, kBytes };

template <typename T>
concept CommArithmetic = std::same_as<T, float> || std::same_as<T, double> ||
    std::same_as<T, int32_t> || std::same_as<T, int64_t>;
template <typename T>
concept CommElement = CommArithmetic<T> || std::same_as<T, std::byte>;

template <CommElement T>
constexpr CommDType comm_dtype_of() {
  if constexpr (std::same_as<T, float>) return CommDType::kF32;
  if constexpr (std::same_as<T, double>) return CommDType::kF64;
  if constexpr (std::same_as<T, int32_t>) return CommDType::kI32;
  if constexpr (std::same_as<T, int64_t>) return CommDType::kI64;
  if constexpr (std::same_as<T, std::byte>) return CommDType::kBytes;
}

constexpr size_t comm_dtype_bytes(CommDType t) {
  switch (t) {
    case CommDType::kF32:
    case CommDType::kI32:
      return 4;
    case CommDType::kF64:
    case CommDType::kI64:
      return 8;
    case CommDType::kBytes:
      return 1;
  }
  return 0;
}

const char* comm_dtype_name(CommDType t);

// The per-peer layout of an all_to_all_v, in elements. Each span has one entry per rank of the
// communicator: this rank sends send_counts[p] elements starting at send[send_displs[p]] to peer
// p, and receives recv_counts[p] elements from peer p into recv[recv_displs[p]]. Counts may be
// zero; regions may be in any order and leave gaps (gaps in recv are left untouched), but the
// receive regions must not overlap. recv_counts[p] on this rank must equal send_counts[me] on
// peer p (the transport reports a mismatch it sees as a truncation error).
struct AllToAllLayout {
  std::span<const int64_t> send_counts;
  std::span<const int64_t> send_displs;
  std::span<const int64_t> recv_counts;
  std::span<const int64_t> recv_displs;
};

// True when the byte ranges [a, a + a_bytes) and [b, b + b_bytes) share a byte.
inline bool comm_regions_overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && pa < pb + b_bytes && pb < pa + a_bytes;
}

// Aborts unless allgather's (or, with op "gather", the root's) send either lies apart from recv
// or is exactly this rank's block of recv (in place). Returns true for the in-place case.
template <typename T>
bool check_allgather_buffers(std::span<const T> send, std::span<T> recv, int rank,
                             const char* op = "allgather") {
  const size_t n = send.size();
  if (!comm_regions_overlap(send.data(), n * sizeof(T), recv.data(), recv.size() * sizeof(T)))
    return false;
  DSS_CHECK(send.data() == recv.data() + static_cast<size_t>(rank) * n, op,
            ": send overlaps recv but is not this rank's block of it");
  return true;
}

// Aborts unless recv holds n_ranks blocks of send's size (allgather; the root's recv of gather).
template <typename T>
void check_allgather_sizes(std::span<const T> send, std::span<T> recv, int n_ranks,
                           const char* op = "allgather") {
  DSS_CHECK(recv.size() == send.size() * static_cast<size_t>(n_ranks), op, ": recv has ",
            recv.size(), " elements, ", n_ranks, n_ranks == 1 ? " rank x " : " ranks x ",
            send.size(), " expected");
}

// Gather: aborts unless root is a rank and, on the root, recv holds n_ranks blocks of send's
// size as allgather's does. Returns whether send is the root's own block of recv (in place).
template <typename T>
bool check_gather(std::span<const T> send, std::span<T> recv, int root, int rank, int n_ranks) {
  DSS_CHECK(root >= 0 && root < n_ranks, "gather: root ", root, " out of range for ", n_ranks,
            n_ranks == 1 ? " rank" : " ranks");
  if (rank != root) return false;
  check_allgather_sizes(send, recv, n_ranks, "gather");
  return check_allgather_buffers(send, recv, rank, "gather");
}

// Aborts unless send holds n_ranks blocks of recv's size (reduce-scatter).
template <typename T>
void check_reduce_scatter_sizes(std::span<const T> send, std::span<T> recv, int n_ranks) {
  DSS_CHECK(send.size() == recv.size() * static_cast<size_t>(n_ranks),
            "reduce_scatter_sum: send has ", send.size(), " elements, ", n_ranks,
            n_ranks == 1 ? " rank x " : " ranks x ", recv.size(), " expected");
}

// Aborts when send and recv overlap (every operation but allgather).
template <typename T>
void check_disjoint_buffers(const char* op, std::span<const T> send, std::span<T> recv) {
  DSS_CHECK(!comm_regions_overlap(send.data(), send.size() * sizeof(T), recv.data(),
                                  recv.size() * sizeof(T)),
            op, ": send and recv overlap");
}

// Aborts unless `layout` has n_ranks entries per span, non-negative counts and displacements,
// and every region fits in its buffer (n_send and n_recv elements).
void check_all_to_all_layout(const AllToAllLayout& layout, int n_ranks, size_t n_send,
                             size_t n_recv);

// What a communicator offers. The operations are templates in every implementation; the concept
// checks them for each element type they accept.
template <typename C>
concept Communicator = requires(C& c, const C& cc, std::span<float> f32,
                                std::span<const float> cf32, std::span<double> f64,
                                std::span<const double> cf64, std::span<int32_t> i32,
                                std::span<const int32_t> ci32, std::span<int64_t> i64,
                                std::span<const int64_t> ci64, std::span<std::byte> b,
                                std::span<const std::byte> cb, const AllToAllLayout& layout,
                                int root) {
  { cc.rank() } -> std::same_as<int>;  // 0 <= rank() < size()
  { cc.size() } -> std::same_as<int>;  // ranks in this communicator, >= 1

  // In place: data[i] = sum over ranks of data[i]. Same size on every rank.
  c.allreduce_sum(f32);
  c.allreduce_sum(f64);
  c.allreduce_sum(i32);
  c.allreduce_sum(i64);

  // recv[p * n + i] = send[i] of rank p, n = send.size() (equal on every rank);
  // recv.size() == size() * n.
  c.allgather(cf32, f32);
  c.allgather(cf64, f64);
  c.allgather(ci32, i32);
  c.allgather(ci64, i64);
  c.allgather(cb, b);

  // On rank `root` only: recv[p * n + i] = send[i] of rank p, n = send.size() (equal on every
  // rank), recv.size() == size() * n; recv is not touched (and may be empty) on the other ranks.
  c.gather(cf32, f32, root);
  c.gather(cf64, f64, root);
  c.gather(ci32, i32, root);
  c.gather(ci64, i64, root);
  c.gather(cb, b, root);

  // recv[i] = sum over ranks of send[rank() * n + i], n = recv.size();
  // send.size() == size() * n.
  c.reduce_scatter_sum(cf32, f32);
  c.reduce_scatter_sum(cf64, f64);
  c.reduce_scatter_sum(ci32, i32);
  c.reduce_scatter_sum(ci64, i64);

  // Personalised exchange with per-peer counts (AllToAllLayout).
  c.all_to_all_v(cf32, f32, layout);
  c.all_to_all_v(cf64, f64, layout);
  c.all_to_all_v(ci32, i32, layout);
  c.all_to_all_v(ci64, i64, layout);
  c.all_to_all_v(cb, b, layout);

  // data on every rank becomes data of rank `root` (0 <= root < size()); same size everywhere.
  c.broadcast(f32, root);
  c.broadcast(f64, root);
  c.broadcast(i32, root);
  c.broadcast(i64, root);
  c.broadcast(b, root);

  // Returns on any rank only after every rank has entered it.
  c.barrier();
};

}  // namespace dss
