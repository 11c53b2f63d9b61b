// Checks of every collective of a `Communicator` (src/dist/communicator.h), shared by the
// LocalComm test (one process) and the MpiComm test (run under mpirun with 1-4 ranks).
//
// Each check fills its inputs from a function of (rank, index) and compares the outputs with the
// closed form of the collective over all ranks, computed here from (size, rank, index) alone
// (for a sum over ranks of a * r + b(i): a * S (S - 1) / 2 + S * b(i)), so an implementation that
// drops, duplicates, reorders or misplaces a rank's contribution fails. Every rank calls the same
// collectives in the same order whatever the outcome (EXPECT, never ASSERT, after the first
// collective), so a failure on one rank cannot leave the others waiting.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <thread>
#include <type_traits>
#include <vector>

#include "dist/communicator.h"

namespace dss::test {

// Per element type: the slope a over ranks and the offset b(i) of the reduction inputs
// a * rank + b(i). The slopes are large enough that a 64-bit type squeezed through 32 bits, or a
// double through a float, changes the result.
template <typename T>
struct Linear;
template <>
struct Linear<float> {
  static constexpr double a = 1000.0;
  static double b(int64_t i) { return static_cast<double>(i); }
};
template <>
struct Linear<double> {
  static constexpr double a = 8589934592.0;  // 2^33
  static double b(int64_t i) { return static_cast<double>(i) + 0.25; }
};
template <>
struct Linear<int32_t> {
  static constexpr double a = 100000.0;
  static double b(int64_t i) { return -7.0 - static_cast<double>(i); }
};
template <>
struct Linear<int64_t> {
  static constexpr double a = 1099511627776.0;  // 2^40
  static double b(int64_t i) { return 3.0 * static_cast<double>(i) - 5.0; }
};

// The input of rank r at index i (exact in T and in double for the sizes used here).
template <CommArithmetic T>
T linear_value(int r, int64_t i) {
  return static_cast<T>(Linear<T>::a * r + Linear<T>::b(i));
}
// sum over r = 0..S-1 of linear_value(r, i), in closed form.
template <CommArithmetic T>
T linear_sum(int n_ranks, int64_t i) {
  const double s = n_ranks;
  return static_cast<T>(Linear<T>::a * s * (s - 1) / 2 + s * Linear<T>::b(i));
}

// Gather / broadcast / exchange payloads: for arithmetic types the linear value, for bytes a
// byte pattern that differs between ranks and indices.
template <CommElement T>
T payload(int r, int64_t i) {
  if constexpr (std::is_same_v<T, std::byte>) {
    return static_cast<std::byte>((r * 37 + i * 11 + 5) & 0xff);
  } else {
    return linear_value<T>(r, i);
  }
}

// What all_to_all_v moves: the i-th element rank s sends to rank d.
template <CommElement T>
T exchange_value(int s, int d, int64_t i) {
  if constexpr (std::is_same_v<T, std::byte>) {
    return static_cast<std::byte>((s * 16 + d * 4 + i * 3 + 1) & 0xff);
  } else {
    return static_cast<T>(s * 10000 + d * 100 + i);
  }
}
// Elements rank s sends to rank d: uneven, zero for some pairs once there are 2+ ranks.
inline int64_t exchange_count(int s, int d) { return ((s + 2 * d + 1) % 4) * (1 + s % 2); }
// Never produced by payload() or exchange_value() for the sizes used here.
template <CommElement T>
T sentinel() {
  if constexpr (std::is_same_v<T, std::byte>) {
    return std::byte{0xEE};
  } else {
    return static_cast<T>(-1);
  }
}

template <CommArithmetic T, typename C>
void check_allreduce(C& c, int64_t n) {
  const int r = c.rank(), S = c.size();
  std::vector<T> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = linear_value<T>(r, i);
  c.allreduce_sum(std::span<T>(x));
  int64_t wrong = 0, first = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (x[static_cast<size_t>(i)] != linear_sum<T>(S, i)) {
      if (first < 0) first = i;
      ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0) << comm_dtype_name(comm_dtype_of<T>()) << " n=" << n << " rank " << r
                      << ": first wrong index " << first;
}

template <CommElement T, typename C>
void check_allgather(C& c, int64_t n) {
  const int r = c.rank(), S = c.size();
  std::vector<T> send(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) send[static_cast<size_t>(i)] = payload<T>(r, i);
  std::vector<T> recv(static_cast<size_t>(S * n), sentinel<T>());
  c.allgather(std::span<const T>(send), std::span<T>(recv));
  for (int p = 0; p < S; ++p)
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(recv[static_cast<size_t>(p * n + i)], payload<T>(p, i))
          << comm_dtype_name(comm_dtype_of<T>()) << " rank " << r << " block " << p << " i " << i;

  // In place: this rank's block of recv is the send buffer.
  std::vector<T> all(static_cast<size_t>(S * n), sentinel<T>());
  for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(r * n + i)] = payload<T>(r, i);
  std::span<T> all_span(all);
  c.allgather(
      std::span<const T>(all_span.subspan(static_cast<size_t>(r * n), static_cast<size_t>(n))),
      all_span);
  for (int p = 0; p < S; ++p)
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(all[static_cast<size_t>(p * n + i)], payload<T>(p, i))
          << "in place, " << comm_dtype_name(comm_dtype_of<T>()) << " rank " << r << " block " << p
          << " i " << i;
}

// Gather to every root in turn: the root's recv holds each rank's block in rank order; another
// rank's recv (its sentinel values) is not touched, and it may pass an empty one. Also in place.
template <CommElement T, typename C>
void check_gather(C& c, int64_t n) {
  const int r = c.rank(), S = c.size();
  std::vector<T> send(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) send[static_cast<size_t>(i)] = payload<T>(r, i);
  for (int root = 0; root < S; ++root) {
    std::vector<T> recv(static_cast<size_t>(S * n), sentinel<T>());
    c.gather(std::span<const T>(send), std::span<T>(recv), root);
    for (int p = 0; p < S; ++p)
      for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(recv[static_cast<size_t>(p * n + i)],
                  r == root ? payload<T>(p, i) : sentinel<T>())
            << comm_dtype_name(comm_dtype_of<T>()) << " root " << root << " rank " << r << " block "
            << p << " i " << i;
    // A second gather: in place on the root, an empty recv elsewhere.
    if (r == root) {  // in place: the root's block of recv is its send buffer
      std::vector<T> all(static_cast<size_t>(S * n), sentinel<T>());
      for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(r * n + i)] = payload<T>(r, i);
      std::span<T> a(all);
      c.gather(std::span<const T>(a.subspan(static_cast<size_t>(r * n), static_cast<size_t>(n))), a,
               root);
      for (int p = 0; p < S; ++p)
        for (int64_t i = 0; i < n; ++i)
          EXPECT_EQ(all[static_cast<size_t>(p * n + i)], payload<T>(p, i)) << "in place";
    } else {
      c.gather(std::span<const T>(send), std::span<T>(), root);
    }
  }
}

template <CommArithmetic T, typename C>
void check_reduce_scatter(C& c, int64_t n) {
  const int r = c.rank(), S = c.size();
  std::vector<T> send(static_cast<size_t>(S * n));
  for (int64_t j = 0; j < S * n; ++j) send[static_cast<size_t>(j)] = linear_value<T>(r, j);
  std::vector<T> recv(static_cast<size_t>(n), sentinel<T>());
  c.reduce_scatter_sum(std::span<const T>(send), std::span<T>(recv));
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(recv[static_cast<size_t>(i)], linear_sum<T>(S, r * n + i))
        << comm_dtype_name(comm_dtype_of<T>()) << " rank " << r << " i " << i;
}

// Send regions are laid out in reverse peer order with a one-element gap between them, receive
// regions in peer order with two-element gaps; gaps must come back untouched.
template <CommElement T, typename C>
void check_all_to_all_v(C& c) {
  const int me = c.rank(), S = c.size();
  const auto n = static_cast<size_t>(S);
  std::vector<int64_t> sc(n), sd(n), rc(n), rd(n);
  int64_t n_send = 0;
  for (int d = S - 1; d >= 0; --d) {
    sc[static_cast<size_t>(d)] = exchange_count(me, d);
    sd[static_cast<size_t>(d)] = n_send;
    n_send += exchange_count(me, d) + 1;
  }
  int64_t n_recv = 0;
  for (int s = 0; s < S; ++s) {
    rc[static_cast<size_t>(s)] = exchange_count(s, me);
    rd[static_cast<size_t>(s)] = n_recv + 2;
    n_recv += exchange_count(s, me) + 2;
  }
  std::vector<T> send(static_cast<size_t>(n_send), sentinel<T>());
  for (int d = 0; d < S; ++d)
    for (int64_t i = 0; i < exchange_count(me, d); ++i)
      send[static_cast<size_t>(sd[static_cast<size_t>(d)] + i)] = exchange_value<T>(me, d, i);
  std::vector<T> recv(static_cast<size_t>(n_recv), sentinel<T>());
  c.all_to_all_v(std::span<const T>(send), std::span<T>(recv), AllToAllLayout{sc, sd, rc, rd});

  std::vector<T> want(static_cast<size_t>(n_recv), sentinel<T>());
  for (int s = 0; s < S; ++s)
    for (int64_t i = 0; i < exchange_count(s, me); ++i)
      want[static_cast<size_t>(rd[static_cast<size_t>(s)] + i)] = exchange_value<T>(s, me, i);
  for (size_t k = 0; k < want.size(); ++k)
    EXPECT_EQ(recv[k], want[k]) << comm_dtype_name(comm_dtype_of<T>()) << " rank " << me << " recv["
                                << k << "]";
}

template <CommElement T, typename C>
void check_broadcast(C& c, int root, int64_t n) {
  const int r = c.rank();
  std::vector<T> x(static_cast<size_t>(n));
  // Every rank starts from its own values; only the root's must survive.
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = payload<T>(r, i);
  c.broadcast(std::span<T>(x), root);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(x[static_cast<size_t>(i)], payload<T>(root, i))
        << comm_dtype_name(comm_dtype_of<T>()) << " root " << root << " rank " << r << " i " << i;
}

// A barrier that returns early fails: rank r waits r * kStep before entering, so no rank can
// leave before the last rank has waited (S - 1) * kStep. The ranks leave the first barrier some
// time apart (0.3 ms when this check failed without an allowance: ASan, 4 ranks on 2 busy cores),
// so a rank's own clock may start that much later than the last rank's: the bound allows
// kStep / 2 of it. A barrier that does not wait still fails on every rank but the last (which
// waits at most (S - 2) * kStep plus the skew).
template <typename C>
void check_barrier(C& c) {
  constexpr auto kStep = std::chrono::milliseconds(30);
  c.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(kStep * c.rank());
  c.barrier();
  const std::chrono::duration<double, std::milli> waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited.count(), static_cast<double>(kStep.count()) * (c.size() - 1.5))
      << "rank " << c.rank() << " left the barrier early (ms)";
}

// split(rank % 2, -rank): the even and the odd ranks, each group in descending rank order.
template <typename C>
void check_split(C& world) {
  const int r = world.rank(), S = world.size();
  const int color = r % 2;
  const int last = color + 2 * ((S - 1 - color) / 2);  // largest rank of this color
  const int group_size = (S - color + 1) / 2;
  auto sub = world.split(color, -r);
  EXPECT_EQ(sub.size(), group_size) << "rank " << r;
  EXPECT_EQ(sub.rank(), (last - r) / 2) << "rank " << r;

  const int64_t me = r;
  std::vector<int64_t> ranks(static_cast<size_t>(sub.size()), -1);
  sub.allgather(std::span<const int64_t>(&me, 1), std::span<int64_t>(ranks));
  for (int j = 0; j < sub.size(); ++j)
    EXPECT_EQ(ranks[static_cast<size_t>(j)], last - 2 * j) << "rank " << r << " member " << j;

  int64_t sum = r;
  sub.allreduce_sum(std::span<int64_t>(&sum, 1));
  EXPECT_EQ(sum, int64_t{group_size} * (color + last) / 2) << "rank " << r;

  // The world again, through split: one color, ordered by world rank.
  auto same = world.split(0, r);
  EXPECT_EQ(same.size(), S);
  EXPECT_EQ(same.rank(), r);
  std::vector<int32_t> x = {linear_value<int32_t>(r, 0), linear_value<int32_t>(r, 1)};
  same.allreduce_sum(std::span<int32_t>(x));
  EXPECT_EQ(x[0], linear_sum<int32_t>(S, 0));
  EXPECT_EQ(x[1], linear_sum<int32_t>(S, 1));
}

}  // namespace dss::test
