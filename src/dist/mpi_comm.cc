#include "dist/mpi_comm.h"

#include <chrono>
#include <climits>
#include <utility>

#include "base/check.h"

namespace dss {
namespace {

MPI_Datatype mpi_type(CommDType t) {
  switch (t) {
    case CommDType::kF32:
      return MPI_FLOAT;
    case CommDType::kF64:
      return MPI_DOUBLE;
    case CommDType::kI32:
      return MPI_INT32_T;
    case CommDType::kI64:
      return MPI_INT64_T;
    case CommDType::kBytes:
      return MPI_BYTE;
  }
  DSS_CHECK(false, "unknown CommDType ", static_cast<int>(t));
  return MPI_DATATYPE_NULL;
}

// MPI counts are int.
int mpi_count(int64_t n, const char* what) {
  DSS_CHECK(n >= 0 && n <= INT_MAX, what, ": ", n, " elements exceed MPI's int count");
  return static_cast<int>(n);
}
int mpi_count(size_t n, const char* what) {
  DSS_CHECK(n <= static_cast<size_t>(INT_MAX), what, ": ", n, " elements exceed MPI's int count");
  return static_cast<int>(n);
}

}  // namespace

void check_mpi(int rc, const char* what) {
  DSS_CHECK(rc == MPI_SUCCESS, what, " failed: ", mpi_error_string(rc));
}

const char* mpi_thread_level_name(MpiThreadLevel level) {
  switch (level) {
    case MpiThreadLevel::kSingle:
      return "MPI_THREAD_SINGLE";
    case MpiThreadLevel::kFunneled:
      return "MPI_THREAD_FUNNELED";
    case MpiThreadLevel::kSerialized:
      return "MPI_THREAD_SERIALIZED";
    case MpiThreadLevel::kMultiple:
      return "MPI_THREAD_MULTIPLE";
  }
  return "?";
}

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return str_cat("MPI error code ", code);
  return std::string(text, static_cast<size_t>(len));
}

Result<std::unique_ptr<MpiRuntime>> MpiRuntime::start(int* argc, char*** argv,
                                                      MpiThreadLevel required) {
  int flag = 0;
  MPI_Finalized(&flag);
  if (flag) return Status::error("MPI was finalised in this process; it cannot start again");
  MPI_Initialized(&flag);
  if (flag) return Status::error("MPI is already initialised (one MpiRuntime per process)");

  static constexpr int kLevels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
                                    MPI_THREAD_MULTIPLE};
  const auto t0 = std::chrono::steady_clock::now();
  int provided = MPI_THREAD_SINGLE;
  const int rc = MPI_Init_thread(argc, argv, kLevels[static_cast<int>(required)], &provided);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc != MPI_SUCCESS) return Status::error("MPI_Init_thread failed: ", mpi_error_string(rc));

  std::unique_ptr<MpiRuntime> rt(new MpiRuntime());
  rt->init_seconds_ = seconds;
  rt->provided_ = MpiThreadLevel::kSingle;
  for (int i = 0; i < 4; ++i)
    if (provided == kLevels[i]) rt->provided_ = static_cast<MpiThreadLevel>(i);
  if (rt->provided_ < required) {
    // rt's destructor finalises MPI.
    return Status::error("MPI provides ", mpi_thread_level_name(rt->provided_), ", ",
                         mpi_thread_level_name(required), " is required");
  }
  // After start-up an MPI error is an invariant violation reported by check_mpi, with MPI's text,
  // instead of MPI's default abort. Communicators split from the world inherit the handler.
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  return rt;
}

MpiRuntime::~MpiRuntime() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

Result<MpiComm> MpiRuntime::world(int expected_size) const {
  MpiComm comm(MPI_COMM_WORLD, /*owned=*/false);
  if (expected_size > 0 && comm.size() != expected_size) {
    return Status::error("the MPI world has ", comm.size(), " rank(s), ", expected_size,
                         " expected (check the launcher's -np against the parallelism flags)");
  }
  return comm;
}

MpiComm::MpiComm(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  const auto n = static_cast<size_t>(size_);
  send_counts_.resize(n);
  send_displs_.resize(n);
  recv_counts_.resize(n);
  recv_displs_.resize(n);
}

MpiComm::MpiComm(MpiComm&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)),
      owned_(std::exchange(other.owned_, false)),
      rank_(other.rank_),
      size_(other.size_),
      send_counts_(std::move(other.send_counts_)),
      send_displs_(std::move(other.send_displs_)),
      recv_counts_(std::move(other.recv_counts_)),
      recv_displs_(std::move(other.recv_displs_)) {}

MpiComm& MpiComm::operator=(MpiComm&& other) noexcept {
  if (this != &other) {
    MpiComm dying(std::move(*this));
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    owned_ = std::exchange(other.owned_, false);
    rank_ = other.rank_;
    size_ = other.size_;
    send_counts_ = std::move(other.send_counts_);
    send_displs_ = std::move(other.send_displs_);
    recv_counts_ = std::move(other.recv_counts_);
    recv_displs_ = std::move(other.recv_displs_);
  }
  return *this;
}

MpiComm::~MpiComm() {
  if (!owned_ || comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  DSS_CHECK(!finalized, "an MpiComm split from the world outlived its MpiRuntime");
  check_mpi(MPI_Comm_free(&comm_), "MPI_Comm_free");
}

void MpiComm::allreduce_sum_raw(void* data, size_t n, CommDType t) {
  check_mpi(
      MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(n, "allreduce_sum"), mpi_type(t), MPI_SUM, comm_),
      "MPI_Allreduce");
}

void MpiComm::allgather_raw(const void* send, void* recv, size_t n, CommDType t) {
  const int count = mpi_count(n, "allgather");
  check_mpi(MPI_Allgather(send == nullptr ? MPI_IN_PLACE : send, count, mpi_type(t), recv, count,
                          mpi_type(t), comm_),
            "MPI_Allgather");
}

void MpiComm::gather_raw(const void* send, void* recv, size_t n, int root, CommDType t) {
  const int count = mpi_count(n, "gather");
  const bool is_root = rank_ == root;
  check_mpi(MPI_Gather(send == nullptr ? MPI_IN_PLACE : send, count, mpi_type(t),
                       is_root ? recv : nullptr, is_root ? count : 0, mpi_type(t), root, comm_),
            "MPI_Gather");
}

void MpiComm::reduce_scatter_sum_raw(const void* send, void* recv, size_t n, CommDType t) {
  check_mpi(MPI_Reduce_scatter_block(send, recv, mpi_count(n, "reduce_scatter_sum"), mpi_type(t),
                                     MPI_SUM, comm_),
            "MPI_Reduce_scatter_block");
}

void MpiComm::all_to_all_v_raw(const void* send, void* recv, const AllToAllLayout& layout,
                               CommDType t) {
  for (size_t p = 0; p < static_cast<size_t>(size_); ++p) {
    send_counts_[p] = mpi_count(layout.send_counts[p], "all_to_all_v send count");
    send_displs_[p] = mpi_count(layout.send_displs[p], "all_to_all_v send displacement");
    recv_counts_[p] = mpi_count(layout.recv_counts[p], "all_to_all_v recv count");
    recv_displs_[p] = mpi_count(layout.recv_displs[p], "all_to_all_v recv displacement");
  }
  check_mpi(MPI_Alltoallv(send, send_counts_.data(), send_displs_.data(), mpi_type(t), recv,
                          recv_counts_.data(), recv_displs_.data(), mpi_type(t), comm_),
            "MPI_Alltoallv");
}

void MpiComm::broadcast_raw(void* data, size_t n, int root, CommDType t) {
  DSS_CHECK(root >= 0 && root < size_, "broadcast: root ", root, " out of range for ", size_,
            " ranks");
  check_mpi(MPI_Bcast(data, mpi_count(n, "broadcast"), mpi_type(t), root, comm_), "MPI_Bcast");
}

void MpiComm::barrier() { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

MpiComm MpiComm::split(int color, int key) const {
  DSS_CHECK(color >= 0, "split: color must be >= 0, got ", color);
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm_, color, key, &out), "MPI_Comm_split");
  return MpiComm(out, /*owned=*/true);
}

}  // namespace dss
