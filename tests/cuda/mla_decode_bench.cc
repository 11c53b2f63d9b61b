// Absorbed MLA decode on the CUDA backend at DeepSeek-V3 671B's attention shapes (128 heads,
// kv_lora_rank 512, rope 64, nope 128, v 128), one layer: B sequences of `context` cached tokens,
// one query token each, through CudaBackend::mla_decode in the model's chunks of kMlaAbsorbChunk
// tokens. Prints one JSON line per (cache dtype, batch): the cache bytes the step reads, the time
// per step, the cache-read rate, and that rate as a fraction of this device's copy rate measured
// in the same run (a device-to-device cudaMemcpy, bytes read + written per second: the HBM bound
// a streaming kernel can reach). FlashMLA's figure for the same form: ~3,000 GB/s on H800.
// Usage: cuda_mla_decode_bench [context=32768] [batches=1,8]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "base/clock.h"

namespace dss {
namespace {

// Bytes read + written per second by a 1 GiB device-to-device copy (best of 5).
double copy_rate() {
  const size_t n = size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, n) != cudaSuccess || cudaMalloc(&b, n) != cudaSuccess) return 0;
  double best = 0;
  for (int i = 0; i < 6; ++i) {
    cudaDeviceSynchronize();
    const double t0 = now_seconds();
    cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice);
    cudaDeviceSynchronize();
    if (i > 0) best = std::max(best, 2.0 * static_cast<double>(n) / (now_seconds() - t0));
  }
  cudaFree(a);
  cudaFree(b);
  return best;
}

struct Shape {
  int32_t H = 128, R = 512, dr = 64, dn = 128, dv = 128, page = 64;
};

void run(CudaBackend& be, DType kv_dtype, int32_t context, int32_t B, double copy_bps) {
  const Shape s;
  const int32_t pages_per_seq = (context + s.page - 1) / s.page;
  const KvLayout layout{1, s.R, s.dr, s.page, 0, kv_dtype};
  const int32_t n_pages = pages_per_seq * B;
  KvCache kv(layout, n_pages,
             be.allocate(KvCache::storage_bytes(layout, n_pages), MemoryUse::kKvCache));
  // Finite values everywhere: bf16 0x3F3F = 0.746, e4m3 0x3F = 1.875, scales 0.746.
  cudaMemset(const_cast<uint8_t*>(kv.latent_rows(0)), 0x3F,
             KvCache::storage_bytes(layout, n_pages));
  ModelConfig c;
  c.n_heads = s.H;
  c.kv_lora_rank = s.R;
  c.d_nope = s.dn;
  c.d_rope = s.dr;
  c.d_v = s.dv;
  c.d_model = 7168;
  WorkspaceLimits lim;
  lim.max_tokens = B;
  lim.max_kv_len = context;
  lim.max_logit_rows = 1;
  auto scratch = be.make_scratch(c, lim);
  // Weights: bf16 W_UK^T [H R, dn] and kv_b [H (dn + dv), R], zero (timing only).
  Buffer wuk = be.allocate(size_t{2} * s.H * s.R * s.dn, MemoryUse::kWeights);
  Buffer kvb = be.allocate(size_t{2} * s.H * (s.dn + s.dv) * s.R, MemoryUse::kWeights);
  const Matrix w_uk_t{DType::kBF16, int64_t{s.H} * s.R, s.dn, wuk.data(), nullptr};
  const Matrix kv_b{DType::kBF16, int64_t{s.H} * (s.dn + s.dv), s.R, kvb.data(), nullptr};
  Buffer q = be.allocate(sizeof(float) * B * s.H * (s.dn + s.dr), MemoryUse::kActivations);
  Buffer attn = be.allocate(sizeof(float) * B * s.H * s.dv, MemoryUse::kActivations);
  std::vector<int32_t> tokens(B, 0), positions(B, context - 1), begin(B + 1), kv_len(B, context);
  std::vector<int32_t> pages(static_cast<size_t>(n_pages)), slots(B, 0);
  for (int32_t i = 0; i <= B; ++i) begin[i] = i;
  for (int32_t i = 0; i < n_pages; ++i) pages[i] = i;
  ForwardBatch b;
  b.tokens = tokens;
  b.positions = positions;
  b.seq_token_begin = begin;
  b.seq_kv_len = kv_len;
  b.page_table = pages;
  b.max_pages = pages_per_seq;
  b.kv_write_slots = slots;
  MlaAttnArgs a;
  a.shape = {s.H, s.dn, s.dr, s.dv, s.R, 0.1f};
  a.kv_b = &kv_b;
  a.w_uk_t = &w_uk_t;
  a.kv = &kv;
  a.batch = &b;
  a.q = reinterpret_cast<const float*>(q.data());
  a.attn = reinterpret_cast<float*>(attn.data());
  be.begin_forward(b, *scratch);
  auto step = [&] {
    int32_t toks[kMlaAbsorbChunk], seqs[kMlaAbsorbChunk];
    for (int32_t t0 = 0; t0 < B; t0 += kMlaAbsorbChunk) {
      const int32_t n = std::min(kMlaAbsorbChunk, B - t0);
      for (int32_t j = 0; j < n; ++j) toks[j] = seqs[j] = t0 + j;
      be.mla_decode(a, toks, seqs, n, *scratch);
    }
    float sink = 0;
    be.download(a.attn, &sink, 1);  // waits for the step
  };
  step();
  // Up to 5 steps, stopping after 2 s (a slow kernel at batch 32 must not eat the device time).
  int iters = 0;
  const double t0 = now_seconds();
  while (iters < 5 && (iters == 0 || (now_seconds() - t0) < 2.0)) {
    step();
    ++iters;
  }
  const double sec = (now_seconds() - t0) / iters;
  const double bytes =
      static_cast<double>(B) * context * static_cast<double>(layout.latent_row_bytes());
  std::printf(
      "{\"bench\":\"mla_decode\",\"kv_dtype\":\"%s\",\"context\":%d,\"batch\":%d,\"heads\":%d,"
      "\"cache_bytes\":%.0f,\"ms\":%.4f,\"gbytes_per_s\":%.1f,\"copy_gbytes_per_s\":%.1f,"
      "\"fraction_of_copy\":%.3f,\"steps_timed\":%d}\n",
      kv_dtype_name(kv_dtype), context, B, s.H, bytes, sec * 1e3, bytes / sec / 1e9, copy_bps / 1e9,
      copy_bps > 0 ? bytes / sec / copy_bps : 0.0, iters);
}

}  // namespace
}  // namespace dss

int main(int argc, char** argv) {
  using namespace dss;
  if (CudaBackend::device_count() == 0) {
    std::printf("{\"bench\":\"mla_decode\",\"skipped\":\"no CUDA device\"}\n");
    return 0;
  }
  const int32_t context = argc > 1 ? std::atoi(argv[1]) : 32768;
  std::vector<int32_t> batches;
  std::stringstream ss(argc > 2 ? argv[2] : "1,8");
  for (std::string x; std::getline(ss, x, ',');) batches.push_back(std::atoi(x.c_str()));
  auto be = CudaBackend::create({});
  if (!be.is_ok()) {
    std::fprintf(stderr, "%s\n", be.message().c_str());
    return 1;
  }
  const double copy_bps = copy_rate();
  for (const DType dt : {DType::kBF16, DType::kF8E4M3})
    for (const int32_t B : batches) run(**be, dt, context, B, copy_bps);
  return 0;
}
