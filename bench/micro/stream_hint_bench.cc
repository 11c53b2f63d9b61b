// Software prefetch hints against tile streams read side by side, one thread, cold and in cache:
// the access patterns of the GEMV (kernels/cpu/matmul-inl.h GemvPrefetchBytes, matmul_bf16-inl.h
// Bf16GemvRun: 1-2 tokens run one tile, "1 stream") without its
// decode. Per 64-byte line some FMAs stand in for the arithmetic (--fma per vector), so a case's
// cold rate shows whether its reads overlap the arithmetic (cold near the lower of the in-cache
// rate and a plain read) or add up with it. Cases:
//   1 stream:        the tiles one after another (a GEMV of 1-tile runs);
//   4 tiles apart:   runs of 4 tiles of 32 KiB side by side, each its own stream (4-tile runs);
//   4 interleaved:   the same 4 tiles stored line by line in turn: one stream for the run;
// each with no hints and with prefetcht0 2 KiB ahead per stream (past a tile's end into the tile
// the stream reads next, as StreamAhead). Each round flushes the caches (a 256 MiB read) before
// every cold measurement; cases alternate inside a round. Prints medians over rounds, GB/s.
//   stream_hint_bench [--rounds N] [--fma 1|2|4|8] [--kib 128-8192]  (defaults 9, 4, 512)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/micro/stream_hint_bench.cc"
#include "hwy/cache_control.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

#include <type_traits>

HWY_BEFORE_NAMESPACE();
namespace dss::bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Reads n_runs runs of kSide tiles of tile_bytes from p (kInterleaved: run r's tile t, line i at
// r * kSide * tile_bytes + (i * kSide + t) * 64; else at (r * kSide + t) * tile_bytes + i * 64),
// kFma FMAs per vector read (fixed accumulators, 2 per tile), prefetching prefetch_bytes ahead per
// stream (0: none).
template <int kSide, bool kInterleaved, int kFma>
float StreamRunsT(const uint8_t* HWY_RESTRICT p, int64_t n_runs, int64_t tile_bytes,
                  int64_t prefetch_bytes) {
  const hn::ScalableTag<float> d;
  constexpr int64_t kVecBytes = static_cast<int64_t>(sizeof(float)) * HWY_LANES(float);
  constexpr int64_t kVecs = 64 / kVecBytes > 0 ? 64 / kVecBytes : 1;  // per 64-byte line
  hn::Vec<decltype(d)> acc[kSide][2];
  for (auto& a : acc) a[0] = a[1] = hn::Zero(d);
  const auto x = hn::Set(d, 1.0001f);
  const int64_t run_bytes = kSide * tile_bytes;
  for (int64_t r = 0; r < n_runs; ++r) {
    const uint8_t* run = p + r * run_bytes;
    for (int64_t i = 0; i < tile_bytes; i += 64) {
      for (int t = 0; t < kSide; ++t) {
        const uint8_t* line = kInterleaved ? run + i * kSide + t * 64 : run + t * tile_bytes + i;
        if (prefetch_bytes > 0) {
          if (kInterleaved) {
            hwy::Prefetch(line + prefetch_bytes * kSide);
          } else {
            hwy::Prefetch(i + prefetch_bytes < tile_bytes
                              ? line + prefetch_bytes
                              : line + prefetch_bytes + (kSide - 1) * tile_bytes);
          }
        }
        for (int64_t v = 0; v < kVecs; ++v) {
          const auto w = hn::Load(d, reinterpret_cast<const float*>(line + v * kVecBytes));
          for (int k = 0; k < kFma; ++k) acc[t][k & 1] = hn::MulAdd(w, x, acc[t][k & 1]);
        }
      }
    }
  }
  auto s = hn::Zero(d);
  for (auto& a : acc) s = hn::Add(s, hn::Add(a[0], a[1]));
  return hn::GetLane(hn::SumOfLanes(d, s));
}

// StreamRunsT for n_side 1 or 4 and n_fma 1, 2, 4 or 8 (others: 4).
float StreamRuns(const uint8_t* HWY_RESTRICT p, int64_t n_runs, int64_t n_side, int64_t tile_bytes,
                 bool interleaved, int64_t prefetch_bytes, int64_t n_fma) {
  auto with_fma = [&](auto side, auto il) {
    constexpr int kSide = decltype(side)::value;
    constexpr bool kIl = decltype(il)::value;
    switch (n_fma) {
      case 1:
        return StreamRunsT<kSide, kIl, 1>(p, n_runs, tile_bytes, prefetch_bytes);
      case 2:
        return StreamRunsT<kSide, kIl, 2>(p, n_runs, tile_bytes, prefetch_bytes);
      case 8:
        return StreamRunsT<kSide, kIl, 8>(p, n_runs, tile_bytes, prefetch_bytes);
      default:
        return StreamRunsT<kSide, kIl, 4>(p, n_runs, tile_bytes, prefetch_bytes);
    }
  };
  using One = std::integral_constant<int, 1>;
  using Four = std::integral_constant<int, 4>;
  if (n_side == 1) return with_fma(One(), std::false_type());
  return interleaved ? with_fma(Four(), std::true_type()) : with_fma(Four(), std::false_type());
}

}  // namespace dss::bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/huge_buffer.h"
#include "bench/micro/median.h"
#include "perf/read_bandwidth.h"

namespace dss::bench {
HWY_EXPORT(StreamRuns);

namespace {

struct Case {
  const char* name;
  int64_t n_side;
  bool interleaved;
  int64_t prefetch_bytes;
};

int run(int argc, char** argv) {
  int32_t rounds = 9;
  int64_t n_fma = 4, kib = 512;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    if (flag == "--fma") n_fma = std::atoi(argv[i + 1]);
    if (flag == "--kib") kib = std::clamp(std::atoi(argv[i + 1]), 128, 8192) / 128 * 128;
  }
  if (n_fma != 1 && n_fma != 2 && n_fma != 8) n_fma = 4;  // what StreamRuns runs: the header
  constexpr int64_t kTileBytes = 32 << 10;                // a 32-row FP8 tile of 1024 columns
  const int64_t bytes = kib << 10;
  const std::vector<Case> cases = {
      {"1 stream, no hints", 1, false, 0},      {"1 stream, 2 KiB hints", 1, false, 2048},
      {"4 tiles apart, no hints", 4, false, 0}, {"4 tiles apart, 2 KiB hints", 4, false, 2048},
      {"4 interleaved, no hints", 4, true, 0},  {"4 interleaved, 2 KiB hints", 4, true, 2048},
  };
  // Each case reads its own region of a large buffer in turn, a different one every round.
  const int64_t n_regions = 64;
  HugeBuffer buf(static_cast<size_t>(bytes * n_regions + (64 << 10)));
  std::memset(buf.data(), 1, buf.size());  // real pages; 1-bytes read as tiny floats
  HugeBuffer flush(size_t{256} << 20);
  std::memset(flush.data(), 1, flush.size());
  float sink = 0;
  auto flush_caches = [&] {
    sink += perf::read_sum(reinterpret_cast<const float*>(flush.data()),
                           static_cast<int64_t>(flush.size() / sizeof(float)));
  };
  const size_t n = cases.size();
  std::vector<std::vector<double>> cold(n), hot(n), read(n);
  int64_t region = 0;
  for (int32_t r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < n; ++i) {
      const Case& c = cases[i];
      const uint8_t* p = buf.data() + (region++ % n_regions) * bytes;
      auto call = [&] {
        sink +=
            HWY_DYNAMIC_DISPATCH(StreamRuns)(p, bytes / (c.n_side * kTileBytes), c.n_side,
                                             kTileBytes, c.interleaved, c.prefetch_bytes, n_fma);
      };
      flush_caches();
      double t0 = now_seconds();
      call();
      cold[i].push_back(now_seconds() - t0);
      double best = 1e9;
      for (int j = 0; j < 3; ++j) {
        t0 = now_seconds();
        call();
        best = std::min(best, now_seconds() - t0);
      }
      hot[i].push_back(best);
      flush_caches();
      t0 = now_seconds();
      sink += perf::read_sum(reinterpret_cast<const float*>(p), bytes / 4);
      read[i].push_back(now_seconds() - t0);
    }
  }
  std::printf("1 thread, %lld KiB per case, %lld FMAs per vector, %d rounds, medians, GB/s\n",
              static_cast<long long>(kib), static_cast<long long>(n_fma), rounds);
  std::printf("  %-28s %8s %8s %8s\n", "case", "cold", "cache", "read");
  const auto gbps = [&](double s) { return static_cast<double>(bytes) / s * 1e-9; };
  for (size_t i = 0; i < n; ++i) {
    std::printf("  %-28s %8.1f %8.1f %8.1f\n", cases[i].name, gbps(median(cold[i])),
                gbps(median(hot[i])), gbps(median(read[i])));
  }
  std::printf("(read: a plain sequential read of the same bytes, cold; checksum %g)\n", sink);
  return 0;
}

}  // namespace
}  // namespace dss::bench

int main(int argc, char** argv) { return dss::bench::run(argc, argv); }
#endif  // HWY_ONCE
