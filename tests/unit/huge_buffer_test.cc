// base/huge_buffer.h: zero-filled, writable over its whole size, moves transfer ownership, and
// buffers of at least one huge page are backed by huge pages where the kernel grants them (read
// from /proc/self/smaps_rollup; skipped, not failed, where THP is off or the file is missing).
#include "base/huge_buffer.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace dss {
namespace {

TEST(HugeBuffer, ZeroFilledWritableAndMovable) {
  for (size_t bytes : {size_t{1}, size_t{4097}, size_t{3} << 20}) {
    HugeBuffer b(bytes);
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(b.size(), bytes);
    EXPECT_TRUE(std::all_of(b.data(), b.data() + bytes, [](uint8_t x) { return x == 0; }));
    std::fill(b.data(), b.data() + bytes, uint8_t{7});
    uint8_t* p = b.data();
    HugeBuffer moved(std::move(b));
    EXPECT_EQ(moved.data(), p);
    EXPECT_EQ(moved.size(), bytes);
    EXPECT_EQ(b.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
    EXPECT_EQ(b.size(), 0u);
    HugeBuffer assigned;
    assigned = std::move(moved);
    EXPECT_EQ(assigned.data()[bytes - 1], 7);
  }
  HugeBuffer empty(0);
  EXPECT_EQ(empty.data(), nullptr);
}

// Pages of [p, p + bytes) resident now (mincore).
size_t resident_pages(const uint8_t* p, size_t bytes) {
  std::vector<unsigned char> vec((bytes + 4095) / 4096);
  EXPECT_EQ(mincore(const_cast<uint8_t*>(p), bytes, vec.data()), 0);
  return static_cast<size_t>(std::count_if(vec.begin(), vec.end(), [](unsigned char v) {
    return (v & 1) != 0;
  }));
}

// prefault() backs the whole buffer at once (the KV pool's RSS is paid at start-up) and keeps it
// zero.
TEST(HugeBuffer, PrefaultMakesEveryPageResident) {
  for (size_t bytes : {size_t{5000}, size_t{5} << 20}) {
    HugeBuffer b(bytes);
    EXPECT_LT(resident_pages(b.data(), bytes), (bytes + 4095) / 4096) << bytes;
    b.prefault();
    EXPECT_EQ(resident_pages(b.data(), bytes), (bytes + 4095) / 4096) << bytes;
    EXPECT_TRUE(std::all_of(b.data(), b.data() + bytes, [](uint8_t x) { return x == 0; }));
  }
}

long anon_huge_kb() {
  std::ifstream f("/proc/self/smaps_rollup");
  std::string key;
  long kb = -1;
  while (f >> key) {
    if (key == "AnonHugePages:") {
      f >> kb;
      return kb;
    }
  }
  return -1;
}

TEST(HugeBuffer, LargeBuffersGetHugePagesWhereTheKernelGrantsThem) {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(mode, line);
  if (line.find("[never]") != std::string::npos || line.empty() || anon_huge_kb() < 0)
    GTEST_SKIP() << "transparent huge pages unavailable: '" << line << "'";
  const long before = anon_huge_kb();
  HugeBuffer b(size_t{16} << 20);
  std::fill(b.data(), b.data() + b.size(), uint8_t{1});
  const long after = anon_huge_kb();
  if (after == before) GTEST_SKIP() << "the kernel granted no huge page (fragmented memory?)";
  EXPECT_GE(after - before, 2048);  // at least one 2 MiB page
}

}  // namespace
}  // namespace dss
