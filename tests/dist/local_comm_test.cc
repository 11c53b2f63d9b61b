// LocalComm: every collective of a world of one, with the same closed-form checks the MPI test
// runs on 1-4 ranks (comm_checks.h), the size checks every communicator makes, and the promise
// that it never starts MPI.
#include "dist/local_comm.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm_checks.h"

namespace dss {
namespace {

using test::check_all_to_all_v;
using test::check_allgather;
using test::check_allreduce;
using test::check_barrier;
using test::check_broadcast;
using test::check_gather;
using test::check_reduce_scatter;
using test::check_split;

TEST(LocalComm, IsRankZeroOfOne) {
  LocalComm c;
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
}

TEST(LocalComm, Allreduce) {
  LocalComm c;
  for (int64_t n : {0, 1, 37}) {
    check_allreduce<float>(c, n);
    check_allreduce<double>(c, n);
    check_allreduce<int32_t>(c, n);
    check_allreduce<int64_t>(c, n);
  }
}

TEST(LocalComm, Allgather) {
  LocalComm c;
  check_allgather<float>(c, 13);
  check_allgather<double>(c, 13);
  check_allgather<int32_t>(c, 13);
  check_allgather<int64_t>(c, 13);
  check_allgather<std::byte>(c, 13);
}

TEST(LocalComm, Gather) {
  LocalComm c;
  check_gather<float>(c, 13);
  check_gather<double>(c, 13);
  check_gather<int32_t>(c, 13);
  check_gather<int64_t>(c, 13);
  check_gather<std::byte>(c, 13);
}

TEST(LocalComm, ReduceScatter) {
  LocalComm c;
  check_reduce_scatter<float>(c, 5);
  check_reduce_scatter<double>(c, 5);
  check_reduce_scatter<int32_t>(c, 5);
  check_reduce_scatter<int64_t>(c, 5);
}

TEST(LocalComm, AllToAllV) {
  LocalComm c;
  check_all_to_all_v<float>(c);
  check_all_to_all_v<double>(c);
  check_all_to_all_v<int32_t>(c);
  check_all_to_all_v<int64_t>(c);
  check_all_to_all_v<std::byte>(c);
}

TEST(LocalComm, BroadcastBarrierSplit) {
  LocalComm c;
  check_broadcast<float>(c, 0, 9);
  check_broadcast<std::byte>(c, 0, 9);
  check_barrier(c);
  check_split(c);
}

TEST(LocalComm, NeverInitialisesMpi) {
  LocalComm c;
  std::vector<float> x = {1.0f, 2.0f};
  c.allreduce_sum(std::span<float>(x));
  c.barrier();
  int initialized = 1;
  ASSERT_EQ(MPI_Initialized(&initialized), MPI_SUCCESS);
  EXPECT_EQ(initialized, 0);
}

TEST(LocalCommDeathTest, SizeMistakesAbort) {
  LocalComm c;
  std::vector<float> a(4), b(3);
  EXPECT_DEATH(c.allgather(std::span<const float>(a), std::span<float>(b)),
               "allgather: recv has 3 elements, 1 rank x 4 expected");
  EXPECT_DEATH(c.reduce_scatter_sum(std::span<const float>(a), std::span<float>(b)),
               "reduce_scatter_sum: send has 4 elements");
  EXPECT_DEATH(c.broadcast(std::span<float>(a), 1), "broadcast: root 1 out of range");
  EXPECT_DEATH(c.reduce_scatter_sum(std::span<const float>(a), std::span<float>(a)),
               "reduce_scatter_sum: send and recv overlap");
  std::span<float> all(a);
  EXPECT_DEATH(c.allgather(std::span<const float>(all.subspan(1, 2)), all.subspan(0, 2)),
               "allgather: send overlaps recv but is not this rank's block");

  const std::vector<int64_t> two = {2}, zero = {0}, three = {3};
  EXPECT_DEATH(c.all_to_all_v(std::span<const float>(a), std::span<float>(b),
                              AllToAllLayout{two, zero, three, zero}),
               "all_to_all_v: rank 0 sends 2 elements to itself but expects 3");
  EXPECT_DEATH(c.all_to_all_v(std::span<const float>(a), std::span<float>(b),
                              AllToAllLayout{three, two, three, zero}),
               "send region of peer 0 \\[2, 5\\) exceeds the send buffer \\(4 elements\\)");
  const std::vector<int64_t> twice = {1, 1};
  EXPECT_DEATH(c.all_to_all_v(std::span<const float>(a), std::span<float>(b),
                              AllToAllLayout{twice, twice, twice, twice}),
               "one entry per rank");
}

}  // namespace
}  // namespace dss
