// Absorbed MLA decode attention (kernels/cpu/mla_attn.h) over a paged cache with the 671B shapes
// (kv_lora_rank 512, rope 64), one query token, one thread, for each storage dtype and a few head
// counts. Reports bytes of cache rows read per second (compare with roofline_bench's single-thread
// read bandwidth) and FLOP/s (2 * H * (R + r) for the scores + 2 * H * R for the output, per row):
// with many heads the kernel is compute bound, as FlashMLA's is on GPUs. The cache (8192 positions,
// 5-19 MiB) mostly exceeds L2, so the rows stream from L3/DRAM. BM_MlaAttnShortBf16 instead
// takes ds-mini's shapes at short contexts, in cache: the per-call costs of batch-1 decode and of
// one token's call at batch > 1.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "base/rng.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/mla_attn.h"
#include "kv/kv_cache.h"

namespace dss {
namespace {

constexpr int32_t kR = 512, kRope = 64, kPage = 64, kPositions = 8192;

// One query token's inputs (q ~ N(0, 0.05^2)) and mla_attn_partial's scratch and outputs.
struct DecodeQuery {
  DecodeQuery(int32_t H, int32_t R, int32_t dr, Rng& rng)
      : q_lat(static_cast<size_t>(H) * R),
        q_pe(static_cast<size_t>(H) * dr),
        scratch(static_cast<size_t>(cpu::mla_attn_scratch_floats(H, R, dr))),
        m(static_cast<size_t>(H)),
        l(static_cast<size_t>(H)),
        o(static_cast<size_t>(H) * R) {
    for (float& x : q_lat) x = 0.05f * rng.normal();
    for (float& x : q_pe) x = 0.05f * rng.normal();
  }
  std::vector<float> q_lat, q_pe, scratch, m, l, o;
};

// bf16_dot: mla_attn_partial_bf16 (a bf16 cache, AVX512-BF16).
void run_decode(benchmark::State& bs, DType dtype, int32_t H, bool bf16_dot, int32_t R = kR,
                int32_t dr = kRope, int32_t n_pos = kPositions) {
  if (bf16_dot && !cpu::cpu_has_bf16_dot()) {
    bs.SkipWithError("mla_attn_partial_bf16 needs AVX512-BF16");
    return;
  }
  KvCache kv(KvLayout{1, R, dr, kPage, 0, dtype}, (n_pos + kPage - 1) / kPage);
  Rng rng(1);
  std::vector<float> row(R + dr);
  for (int32_t s = 0; s < n_pos; ++s) {
    for (float& x : row) x = rng.normal();
    kv.store(0, s, row.data());
  }
  std::vector<int32_t> pages((n_pos + kPage - 1) / kPage);
  std::iota(pages.rbegin(), pages.rend(), 0);  // reversed: non-contiguous page order
  cpu::MlaCacheView v{kv.latent_rows(0),
                      static_cast<int64_t>(kv.layout().latent_row_bytes()),
                      dtype,
                      R,
                      dr,
                      pages.data(),
                      kPage};
  DecodeQuery dq(H, R, dr, rng);
  for (auto _ : bs) {
    (bf16_dot ? cpu::mla_attn_partial_bf16 : cpu::mla_attn_partial)(
        v, nullptr, 0, n_pos, dq.q_lat.data(), dq.q_pe.data(), H, 0.1f, dq.scratch.data(),
        dq.m.data(), dq.l.data(), dq.o.data());
    benchmark::DoNotOptimize(dq.o.data());
  }
  const double rows = static_cast<double>(bs.iterations()) * n_pos;
  bs.SetBytesProcessed(static_cast<int64_t>(rows) *
                       static_cast<int64_t>(kv.layout().latent_row_bytes()));
  bs.counters["FLOP/s"] =
      benchmark::Counter(rows * 2.0 * H * (2 * R + dr), benchmark::Counter::kIsRate);
  bs.SetLabel(bf16_dot ? "bf16, bf16-dot" : kv_dtype_name(dtype));
}
void BM_MlaAttnDecode(benchmark::State& bs) {
  run_decode(bs, static_cast<DType>(bs.range(0)), static_cast<int32_t>(bs.range(1)), false);
}
// The bf16 cache through mla_attn_partial_bf16 (as the model runs with --matmul-dtype bf16):
// compare with BM_MlaAttnDecode/<bf16>/H.
void BM_MlaAttnDecodeBf16Dot(benchmark::State& bs) {
  run_decode(bs, DType::kBF16, static_cast<int32_t>(bs.range(0)), true);
}
BENCHMARK(BM_MlaAttnDecodeBf16Dot)->Arg(16)->Arg(128)->Unit(benchmark::kMillisecond);

// Decode at short contexts with ds-mini's shapes (kv_lora_rank 256, rope 32) over a bf16 cache of
// range(1) positions, in cache: per-call overheads, not streaming. range(2) heads: 8 = one
// thread's half of the 16 at batch 1 (the model splits heads across 2 threads there), 16 = one
// token's call at batch > 1 (a token per call). range(0): 1 = the bf16-dot kernel, 0 = the f32
// one.
void BM_MlaAttnShortBf16(benchmark::State& bs) {
  run_decode(bs, DType::kBF16, static_cast<int32_t>(bs.range(2)), bs.range(0) != 0, 256, 32,
             static_cast<int32_t>(bs.range(1)));
}
BENCHMARK(BM_MlaAttnShortBf16)
    ->ArgsProduct({{0, 1}, {8, 64, 128}, {8, 16}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlaAttnDecode)
    ->ArgsProduct({{static_cast<int64_t>(DType::kF32), static_cast<int64_t>(DType::kBF16),
                    static_cast<int64_t>(DType::kF8E4M3)},
                   {1, 16, 128}})
    ->Unit(benchmark::kMillisecond);

// One V3.2 sparse decode step's attention with ds-mini-v32 shapes (kv_lora_rank 256, rope 32, 16
// heads, fp8 rows of 328 bytes): 12 layers of a 32K-position cache (129 MB, beyond the L3), each
// attending to 2048 positions chosen uniformly at random (sorted, as top_k_indices returns them):
// scattered rows, each a DRAM miss. Per-token milliseconds, one thread; compare with
// BM_MlaAttnSparseStep/contiguous (the first 2048 positions: what a 2K context reads).
void BM_MlaAttnSparseStep(benchmark::State& bs) {
  constexpr int32_t R = 256, dr = 32, H = 16, kLayers = 12, kCtx = 32768, kSel = 2048;
  const bool scattered = bs.range(0) != 0;
  KvCache kv(KvLayout{kLayers, R, dr, kPage, 0, DType::kF8E4M3}, kCtx / kPage);
  Rng rng(2);
  std::vector<float> row(R + dr);
  for (int32_t l = 0; l < kLayers; ++l) {
    for (int32_t s = 0; s < kCtx; ++s) {
      for (float& x : row) x = rng.normal();
      kv.store(l, s, row.data());
    }
  }
  std::vector<int32_t> pages(kCtx / kPage);
  std::iota(pages.begin(), pages.end(), 0);
  std::vector<std::vector<int32_t>> sel(kLayers);
  for (auto& v : sel) {
    std::vector<int32_t> all(kCtx);
    std::iota(all.begin(), all.end(), 0);
    if (scattered) {
      for (int32_t i = 0; i < kSel; ++i)
        std::swap(all[static_cast<size_t>(i)],
                  all[static_cast<size_t>(i + static_cast<int32_t>(rng.next_u64() % (kCtx - i)))]);
    }
    v.assign(all.begin(), all.begin() + kSel);
    std::sort(v.begin(), v.end());
  }
  DecodeQuery dq(H, R, dr, rng);
  for (auto _ : bs) {
    for (int32_t layer = 0; layer < kLayers; ++layer) {
      cpu::MlaCacheView v{kv.latent_rows(layer),
                          static_cast<int64_t>(kv.layout().latent_row_bytes()),
                          DType::kF8E4M3,
                          R,
                          dr,
                          pages.data(),
                          kPage};
      cpu::mla_attn_partial(v, sel[static_cast<size_t>(layer)].data(), 0, kSel, dq.q_lat.data(),
                            dq.q_pe.data(), H, 0.1f, dq.scratch.data(), dq.m.data(), dq.l.data(),
                            dq.o.data());
      benchmark::DoNotOptimize(dq.o.data());
    }
  }
  bs.SetLabel(scattered ? "2048 of 32K scattered" : "2048 contiguous");
}
BENCHMARK(BM_MlaAttnSparseStep)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dss

BENCHMARK_MAIN();
