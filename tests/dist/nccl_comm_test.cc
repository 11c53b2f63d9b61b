// NcclComm (DSS_CUDA builds): the closed-form checks of comm_checks.h on device buffers, through
// an adapter that stages each host buffer on the device and back, so the same checks as for
// LocalComm and MpiComm run against NCCL. One GPU per rank (rank i uses device i % count);
// exits 77 (ctest: skipped) when no CUDA device is present. ctest runs it as a singleton (size 1);
// on a machine with N GPUs, `mpirun -np N nccl_comm_test` runs it across them.
#include "dist/nccl_comm.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <span>

#include "comm_checks.h"
#include "dist/mpi_comm.h"

namespace dss {
namespace {

NcclComm* g_nccl = nullptr;

void cuda_ok(cudaError_t e) { DSS_CHECK(e == cudaSuccess, cudaGetErrorString(e)); }

// A device buffer holding a copy of a host span, copied back by `download`.
template <typename T>
struct Staged {
  T* dev = nullptr;
  size_t n = 0;
  explicit Staged(std::span<const T> host) : n(host.size()) {
    cuda_ok(cudaMalloc(&dev, std::max<size_t>(n, 1) * sizeof(T)));
    if (n > 0) cuda_ok(cudaMemcpy(dev, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~Staged() { cudaFree(dev); }
  std::span<T> span() { return {dev, n}; }
  void download(std::span<T> host) {
    if (n > 0) cuda_ok(cudaMemcpy(host.data(), dev, n * sizeof(T), cudaMemcpyDeviceToHost));
  }
};

// The Communicator over host buffers that NcclComm is over device buffers.
class HostStagedNccl {
 public:
  explicit HostStagedNccl(NcclComm& c) : c_(c) {}
  int rank() const { return c_.rank(); }
  int size() const { return c_.size(); }

  template <CommArithmetic T>
  void allreduce_sum(std::span<T> data) {
    Staged<T> d{std::span<const T>(data)};
    c_.allreduce_sum(d.span());
    finish(d, data);
  }
  template <CommElement T>
  void allgather(std::span<const T> send, std::span<T> recv) {
    Staged<T> r{std::span<const T>(recv)};
    const auto n = send.size();
    if (send.data() == recv.data() + static_cast<size_t>(rank()) * n) {  // in place
      c_.allgather(std::span<const T>(r.span().subspan(static_cast<size_t>(rank()) * n, n)),
                   r.span());
    } else {
      Staged<T> s{send};
      c_.allgather(std::span<const T>(s.span()), r.span());
      cuda_ok(cudaStreamSynchronize(c_.stream()));
    }
    finish(r, recv);
  }
  template <CommElement T>
  void gather(std::span<const T> send, std::span<T> recv, int root) {
    Staged<T> r{std::span<const T>(recv)};
    const auto n = send.size();
    if (rank() == root && send.data() == recv.data() + static_cast<size_t>(root) * n) {
      c_.gather(std::span<const T>(r.span().subspan(static_cast<size_t>(root) * n, n)), r.span(),
                root);
    } else {
      Staged<T> s{send};
      c_.gather(std::span<const T>(s.span()), r.span(), root);
      cuda_ok(cudaStreamSynchronize(c_.stream()));
    }
    finish(r, recv);
  }
  template <CommArithmetic T>
  void reduce_scatter_sum(std::span<const T> send, std::span<T> recv) {
    Staged<T> s{send}, r{std::span<const T>(recv)};
    c_.reduce_scatter_sum(std::span<const T>(s.span()), r.span());
    finish(r, recv);
  }
  template <CommElement T>
  void all_to_all_v(std::span<const T> send, std::span<T> recv, const AllToAllLayout& layout) {
    Staged<T> s{send}, r{std::span<const T>(recv)};
    c_.all_to_all_v(std::span<const T>(s.span()), r.span(), layout);
    finish(r, recv);
  }
  template <CommElement T>
  void broadcast(std::span<T> data, int root) {
    Staged<T> d{std::span<const T>(data)};
    c_.broadcast(d.span(), root);
    finish(d, data);
  }
  void barrier() { c_.barrier(); }

 private:
  template <typename T>
  void finish(Staged<T>& d, std::span<T> host) {
    cuda_ok(cudaStreamSynchronize(c_.stream()));
    d.download(host);
  }
  NcclComm& c_;
};
static_assert(Communicator<HostStagedNccl>);

TEST(NcclComm, Collectives) {
  HostStagedNccl c(*g_nccl);
  for (int64_t n : {1, 37}) {
    test::check_allreduce<float>(c, n);
    test::check_allreduce<double>(c, n);
    test::check_allreduce<int32_t>(c, n);
    test::check_allreduce<int64_t>(c, n);
  }
  test::check_allgather<float>(c, 13);
  test::check_allgather<std::byte>(c, 13);
  test::check_allgather<int64_t>(c, 13);
  test::check_reduce_scatter<float>(c, 5);
  test::check_reduce_scatter<double>(c, 5);
  test::check_reduce_scatter<int32_t>(c, 5);
  test::check_reduce_scatter<int64_t>(c, 5);
  test::check_all_to_all_v<float>(c);
  test::check_all_to_all_v<double>(c);
  test::check_all_to_all_v<int32_t>(c);
  test::check_all_to_all_v<int64_t>(c);
  test::check_all_to_all_v<std::byte>(c);
  for (int root = c.size() - 1; root >= 0; --root) {
    test::check_broadcast<float>(c, root, 9);
    test::check_broadcast<std::byte>(c, root, 9);
  }
  test::check_barrier(c);
}

}  // namespace
}  // namespace dss

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto rt = dss::MpiRuntime::start(nullptr, nullptr, dss::MpiThreadLevel::kSerialized);
  if (!rt.is_ok()) {
    std::fprintf(stderr, "nccl_comm_test: %s\n", rt.message().c_str());
    return 1;
  }
  int rc = 1;
  {
    auto world = (*rt)->world();
    if (!world.is_ok()) return 1;
    int n_devices = 0;
    if (cudaGetDeviceCount(&n_devices) != cudaSuccess) n_devices = 0;
    if (n_devices == 0) {
      std::printf("SKIP: no CUDA device\n");
      return 77;
    }
    auto nccl = dss::NcclComm::create(*world, world->rank() % n_devices);
    if (!nccl.is_ok()) {
      std::fprintf(stderr, "nccl_comm_test: %s\n", nccl.message().c_str());
      return 1;
    }
    dss::g_nccl = &*nccl;
    rc = RUN_ALL_TESTS();
    dss::g_nccl = nullptr;
  }
  return rc;
}
