#include "dist/nccl_comm.h"

#include <array>
#include <cstring>
#include <utility>

#include "base/check.h"

namespace dss {
namespace {

ncclDataType_t nccl_type(CommDType t) {
  switch (t) {
    case CommDType::kF32:
      return ncclFloat32;
    case CommDType::kF64:
      return ncclFloat64;
    case CommDType::kI32:
      return ncclInt32;
    case CommDType::kI64:
      return ncclInt64;
    case CommDType::kBytes:
      return ncclUint8;
  }
  DSS_CHECK(false, "unknown CommDType ", static_cast<int>(t));
  return ncclUint8;
}

void check_nccl(ncclResult_t rc, ncclComm_t comm, const char* what) {
  DSS_CHECK(rc == ncclSuccess, what, " failed: ", ncclGetErrorString(rc),
            comm != nullptr ? str_cat(" (", ncclGetLastError(comm), ")") : std::string());
}

void check_cuda(cudaError_t rc, const char* what) {
  DSS_CHECK(rc == cudaSuccess, what, " failed: ", cudaGetErrorString(rc));
}

// Start-up steps report on every rank: the number of ranks whose step failed, summed over boot.
int64_t failures_everywhere(MpiComm& boot, bool failed_here) {
  int64_t n = failed_here ? 1 : 0;
  boot.allreduce_sum(std::span<int64_t>(&n, 1));
  return n;
}

}  // namespace

Result<NcclComm> NcclComm::create(MpiComm& boot, int device) {
  NcclComm c;
  c.rank_ = boot.rank();
  c.size_ = boot.size();
  c.device_ = device;

  // 1. The device, the stream and the barrier word: each rank on its own, then agree.
  Status local;
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) {
    local = Status::error("cudaSetDevice(", device, "): ", cudaGetErrorString(e));
  } else if (cudaError_t e2 = cudaStreamCreateWithFlags(&c.stream_, cudaStreamNonBlocking);
             e2 != cudaSuccess) {
    local = Status::error("cudaStreamCreate: ", cudaGetErrorString(e2));
  } else if (cudaError_t e3 = cudaMalloc(&c.barrier_word_, sizeof(int32_t)); e3 != cudaSuccess) {
    local = Status::error("cudaMalloc: ", cudaGetErrorString(e3));
  }
  if (const int64_t n = failures_everywhere(boot, !local.is_ok()); n > 0) {
    if (!local.is_ok()) return local.with_context(str_cat("NCCL start-up, rank ", c.rank_, ": "));
    return Status::error("NCCL start-up: ", n, " other rank(s) could not select their device");
  }

  // 2. The unique id from rank 0, with a flag saying whether rank 0 could make one.
  std::array<std::byte, 1 + sizeof(ncclUniqueId)> msg{};
  ncclUniqueId id{};
  if (c.rank_ == 0) {
    const ncclResult_t rc = ncclGetUniqueId(&id);
    if (rc != ncclSuccess) {
      local = Status::error("ncclGetUniqueId: ", ncclGetErrorString(rc));
    } else {
      msg[0] = std::byte{1};
      std::memcpy(msg.data() + 1, &id, sizeof id);
    }
  }
  boot.broadcast(std::span<std::byte>(msg), 0);
  if (msg[0] != std::byte{1}) {
    if (!local.is_ok()) return local.with_context("NCCL start-up, rank 0: ");
    return Status::error("NCCL start-up: rank 0 could not make the NCCL unique id");
  }
  std::memcpy(&id, msg.data() + 1, sizeof id);

  // 3. Join. A rank that fails here reports it; the others learn it from the count.
  const ncclResult_t rc = ncclCommInitRank(&c.comm_, c.size_, id, c.rank_);
  if (rc != ncclSuccess) {
    c.comm_ = nullptr;
    local = Status::error("ncclCommInitRank: ", ncclGetErrorString(rc));
  }
  if (const int64_t n = failures_everywhere(boot, !local.is_ok()); n > 0) {
    if (!local.is_ok()) return local.with_context(str_cat("NCCL start-up, rank ", c.rank_, ": "));
    ncclCommAbort(std::exchange(c.comm_, nullptr));  // its peers are gone: do not finalise
    return Status::error("NCCL start-up: ", n, " other rank(s) failed ncclCommInitRank");
  }
  return c;
}

NcclComm::NcclComm(NcclComm&& other) noexcept
    : comm_(std::exchange(other.comm_, nullptr)),
      stream_(std::exchange(other.stream_, nullptr)),
      barrier_word_(std::exchange(other.barrier_word_, nullptr)),
      rank_(other.rank_),
      size_(other.size_),
      device_(other.device_) {}

NcclComm& NcclComm::operator=(NcclComm&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, nullptr);
    stream_ = std::exchange(other.stream_, nullptr);
    barrier_word_ = std::exchange(other.barrier_word_, nullptr);
    rank_ = other.rank_;
    size_ = other.size_;
    device_ = other.device_;
  }
  return *this;
}

NcclComm::~NcclComm() { release(); }

void NcclComm::release() {
  if (comm_ != nullptr) {
    check_nccl(ncclCommFinalize(comm_), comm_, "ncclCommFinalize");
    check_nccl(ncclCommDestroy(comm_), nullptr, "ncclCommDestroy");
    comm_ = nullptr;
  }
  if (barrier_word_ != nullptr) {
    check_cuda(cudaFree(barrier_word_), "cudaFree");
    barrier_word_ = nullptr;
  }
  if (stream_ != nullptr) {
    check_cuda(cudaStreamDestroy(stream_), "cudaStreamDestroy");
    stream_ = nullptr;
  }
}

void NcclComm::allreduce_sum_raw(void* data, size_t n, CommDType t) {
  check_nccl(ncclAllReduce(data, data, n, nccl_type(t), ncclSum, comm_, stream_), comm_,
             "ncclAllReduce");
}

void NcclComm::allgather_raw(const void* send, void* recv, size_t n, CommDType t) {
  check_nccl(ncclAllGather(send, recv, n, nccl_type(t), comm_, stream_), comm_, "ncclAllGather");
}

// NCCL has no gather: the other ranks send their block to the root in one group, the root
// receives each and copies its own.
void NcclComm::gather_raw(const void* send, void* recv, size_t n, int root, CommDType t) {
  const size_t bytes = n * comm_dtype_bytes(t);
  auto* r = static_cast<std::byte*>(recv);
  if (rank_ == root && send != nullptr) {
    check_cuda(cudaMemcpyAsync(r + static_cast<size_t>(root) * bytes, send, bytes,
                               cudaMemcpyDeviceToDevice, stream_),
               "cudaMemcpyAsync (gather)");
  }
  check_nccl(ncclGroupStart(), comm_, "ncclGroupStart");
  if (rank_ != root) {
    check_nccl(ncclSend(send, n, nccl_type(t), root, comm_, stream_), comm_, "ncclSend");
  } else {
    for (int p = 0; p < size_; ++p) {
      if (p == root) continue;
      check_nccl(ncclRecv(r + static_cast<size_t>(p) * bytes, n, nccl_type(t), p, comm_, stream_),
                 comm_, "ncclRecv");
    }
  }
  check_nccl(ncclGroupEnd(), comm_, "ncclGroupEnd (gather)");
}

void NcclComm::reduce_scatter_sum_raw(const void* send, void* recv, size_t n, CommDType t) {
  check_nccl(ncclReduceScatter(send, recv, n, nccl_type(t), ncclSum, comm_, stream_), comm_,
             "ncclReduceScatter");
}

void NcclComm::all_to_all_v_raw(const void* send, void* recv, const AllToAllLayout& layout,
                                CommDType t) {
  const size_t esz = comm_dtype_bytes(t);
  const auto* s = static_cast<const std::byte*>(send);
  auto* r = static_cast<std::byte*>(recv);
  check_nccl(ncclGroupStart(), comm_, "ncclGroupStart");
  for (int p = 0; p < size_; ++p) {
    const auto i = static_cast<size_t>(p);
    if (layout.send_counts[i] > 0) {
      check_nccl(
          ncclSend(s + static_cast<size_t>(layout.send_displs[i]) * esz,
                   static_cast<size_t>(layout.send_counts[i]), nccl_type(t), p, comm_, stream_),
          comm_, "ncclSend");
    }
    if (layout.recv_counts[i] > 0) {
      check_nccl(
          ncclRecv(r + static_cast<size_t>(layout.recv_displs[i]) * esz,
                   static_cast<size_t>(layout.recv_counts[i]), nccl_type(t), p, comm_, stream_),
          comm_, "ncclRecv");
    }
  }
  check_nccl(ncclGroupEnd(), comm_, "ncclGroupEnd (all_to_all_v)");
}

void NcclComm::broadcast_raw(void* data, size_t n, int root, CommDType t) {
  DSS_CHECK(root >= 0 && root < size_, "broadcast: root ", root, " out of range for ", size_,
            " ranks");
  check_nccl(ncclBroadcast(data, data, n, nccl_type(t), root, comm_, stream_), comm_,
             "ncclBroadcast");
}

void NcclComm::barrier() {
  check_nccl(ncclAllReduce(barrier_word_, barrier_word_, 1, ncclInt32, ncclSum, comm_, stream_),
             comm_, "ncclAllReduce (barrier)");
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (barrier)");
}

}  // namespace dss
