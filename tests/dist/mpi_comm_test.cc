// MpiComm under a real MPI launch: every collective and element type, split sub-communicators
// and the start-up errors, with the closed-form checks of comm_checks.h.
//
// ctest runs this binary alone (an OpenMPI singleton, size 1) and under `mpirun -np 2/3/4`, and
// scripts/netns-mpirun runs it with one rank per network namespace. The flag
// --dss-expect-size=N makes a world of any other size fail start-up, so a launcher that starts N
// unrelated singletons instead of one world of N cannot pass. Only rank 0 prints gtest's report;
// the other ranks print their failures, prefixed with their rank.
#include "dist/mpi_comm.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "comm_checks.h"

namespace dss {
namespace {

MpiRuntime* g_runtime = nullptr;
MpiComm* g_world = nullptr;

using test::check_all_to_all_v;
using test::check_allgather;
using test::check_allreduce;
using test::check_barrier;
using test::check_broadcast;
using test::check_gather;
using test::check_reduce_scatter;
using test::check_split;

TEST(MpiRuntime, ProvidesSerializedThreads) {
  EXPECT_GE(g_runtime->provided(), MpiThreadLevel::kSerialized)
      << mpi_thread_level_name(g_runtime->provided());
}

TEST(MpiRuntime, StartsOncePerProcess) {
  auto again = MpiRuntime::start(nullptr, nullptr, MpiThreadLevel::kSerialized);
  ASSERT_FALSE(again.is_ok());
  EXPECT_NE(again.message().find("already initialised"), std::string::npos) << again.message();
}

TEST(MpiRuntime, WorldOfTheWrongSizeIsAnError) {
  const int n = g_world->size();
  auto w = g_runtime->world(n + 1);
  ASSERT_FALSE(w.is_ok());
  EXPECT_NE(w.message().find(str_cat("has ", n, " rank(s), ", n + 1, " expected")),
            std::string::npos)
      << w.message();
  EXPECT_TRUE(g_runtime->world(n).is_ok());
  EXPECT_TRUE(g_runtime->world().is_ok());
}

TEST(MpiRuntime, ErrorStringsComeFromMpi) {
  EXPECT_NE(mpi_error_string(MPI_ERR_TRUNCATE).find("truncat"), std::string::npos)
      << mpi_error_string(MPI_ERR_TRUNCATE);
}

TEST(MpiComm, RanksAreAPermutation) {
  MpiComm& c = *g_world;
  ASSERT_GE(c.rank(), 0);
  ASSERT_LT(c.rank(), c.size());
  const int32_t me = c.rank();
  std::vector<int32_t> all(static_cast<size_t>(c.size()), -1);
  c.allgather(std::span<const int32_t>(&me, 1), std::span<int32_t>(all));
  for (int p = 0; p < c.size(); ++p) EXPECT_EQ(all[static_cast<size_t>(p)], p);
}

TEST(MpiComm, Allreduce) {
  MpiComm& c = *g_world;
  for (int64_t n : {0, 1, 37}) {
    check_allreduce<float>(c, n);
    check_allreduce<double>(c, n);
    check_allreduce<int32_t>(c, n);
    check_allreduce<int64_t>(c, n);
  }
}

// 4 MiB per rank: large enough for OpenMPI's large-message algorithms, and for the netns test
// to see the data cross the veth links.
TEST(MpiComm, AllreduceLarge) { check_allreduce<float>(*g_world, int64_t{1} << 20); }

TEST(MpiComm, Allgather) {
  MpiComm& c = *g_world;
  check_allgather<float>(c, 13);
  check_allgather<double>(c, 13);
  check_allgather<int32_t>(c, 13);
  check_allgather<int64_t>(c, 13);
  check_allgather<std::byte>(c, 13);
}

TEST(MpiComm, Gather) {
  MpiComm& c = *g_world;
  check_gather<float>(c, 13);
  check_gather<double>(c, 13);
  check_gather<int32_t>(c, 13);
  check_gather<int64_t>(c, 13);
  check_gather<std::byte>(c, 13);
}

TEST(MpiComm, ReduceScatter) {
  MpiComm& c = *g_world;
  for (int64_t n : {1, 5}) {
    check_reduce_scatter<float>(c, n);
    check_reduce_scatter<double>(c, n);
    check_reduce_scatter<int32_t>(c, n);
    check_reduce_scatter<int64_t>(c, n);
  }
}

TEST(MpiComm, AllToAllV) {
  MpiComm& c = *g_world;
  check_all_to_all_v<float>(c);
  check_all_to_all_v<double>(c);
  check_all_to_all_v<int32_t>(c);
  check_all_to_all_v<int64_t>(c);
  check_all_to_all_v<std::byte>(c);
}

TEST(MpiComm, BroadcastFromEveryRoot) {
  MpiComm& c = *g_world;
  for (int root = c.size() - 1; root >= 0; --root) {
    check_broadcast<float>(c, root, 9);
    check_broadcast<double>(c, root, 9);
    check_broadcast<int32_t>(c, root, 9);
    check_broadcast<int64_t>(c, root, 9);
    check_broadcast<std::byte>(c, root, 9);
  }
}

TEST(MpiComm, Barrier) { check_barrier(*g_world); }

TEST(MpiComm, Split) { check_split(*g_world); }

// Collectives on a split communicator, between collectives on the world.
TEST(MpiComm, CollectivesOnASplit) {
  MpiComm& world = *g_world;
  MpiComm sub = world.split(world.rank() % 2, world.rank());
  check_allreduce<int64_t>(sub, 11);
  check_reduce_scatter<double>(sub, 3);
  check_all_to_all_v<float>(sub);
  check_broadcast<std::byte>(sub, sub.size() - 1, 7);
  check_allreduce<float>(world, 11);
  check_allgather<int32_t>(sub, 4);
  MpiComm moved = std::move(sub);
  check_allreduce<double>(moved, 5);
}

// Rank 0 prints gtest's report; other ranks print only their failures.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_,
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.message());
  }
  void OnTestEnd(const ::testing::TestInfo& t) override {
    if (t.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, t.test_suite_name(), t.name());
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace dss

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int expect_size = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--dss-expect-size=", 18) == 0) {
      expect_size = std::atoi(argv[i] + 18);
    } else {
      std::fprintf(stderr, "mpi_comm_test: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  auto rt = dss::MpiRuntime::start(nullptr, nullptr, dss::MpiThreadLevel::kSerialized);
  if (!rt.is_ok()) {
    std::fprintf(stderr, "mpi_comm_test: %s\n", rt.message().c_str());
    return 1;
  }
  int rc = 1;
  {
    auto world = (*rt)->world(expect_size);
    if (!world.is_ok()) {
      std::fprintf(stderr, "mpi_comm_test: %s\n", world.message().c_str());
      return 1;
    }
    dss::g_runtime = rt->get();
    dss::g_world = &*world;
    if (world->rank() == 0) {
      std::printf("mpi_comm_test: %d rank(s), %s, MPI_Init_thread took %.3f s\n", world->size(),
                  dss::mpi_thread_level_name((*rt)->provided()), (*rt)->init_seconds());
    } else {
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
      listeners.Append(new dss::FailurePrinter(world->rank()));
    }
    rc = RUN_ALL_TESTS();
    dss::g_world = nullptr;
  }
  dss::g_runtime = nullptr;
  return rc;
}
