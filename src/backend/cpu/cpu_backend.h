// CpuBackend: the backend seam (backend/backend.h) on the host, over the Highway kernels of
// kernels/cpu and one thread pool. The model library includes this header only; the kernels'
// headers stay inside backend/cpu/*.cc.
//
// Thread-safety: const operations; one forward at a time per scratch. The pool runs one
// parallel_for at a time (base/thread_pool.h), so concurrent forwards need distinct backends.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "base/thread_pool.h"

namespace dss {

struct CpuScratch;

// Speeds of the two arithmetics of the tiled FP8 / BF16 linear layers (MatmulArith) on this CPU,
// as CpuBackend::measure_matmul_rates times them for --matmul-dtype auto, GFLOP/s: at 1 token
// (decode's GEMV) and at n_tok tokens (a prefill chunk's GEMM). bf16: 0 without AVX512-BF16.
struct MatmulRates {
  double f32_gemv = 0, f32_gemm = 0;    // MatmulArith::kF32 on kTiled
  double bf16_gemv = 0, bf16_gemm = 0;  // MatmulArith::kBf16Dot on kTiledPairs
};
// The rates from all timed rounds (`best`) and from each half of them alone: where the halves
// disagree, load from elsewhere disturbed the measurement (the caller may then not trust it).
struct MatmulProbe {
  MatmulRates best, first_half, second_half;
};

class CpuBackend {
 public:
  static constexpr bool kDeviceMemory = false;

  struct Options {
    int32_t n_threads = 1;         // >= 1, the calling thread included
    bool act_quant_fp8 = false;    // W8A8: FP8 weights' inputs quantised per token per 128 values
    bool act_quant_ue8m0 = false;  // ... with power-of-two scales (V3.1 / V3.2 checkpoints)
    // Attention over a bf16 cache by vdpbf16ps (the --matmul-dtype bf16 arithmetic; needs a CPU
    // with AVX512-BF16, checked by the caller).
    bool bf16_attention = false;
  };
  explicit CpuBackend(const Options& o);

  // Whether this CPU has AVX512-BF16 (vdpbf16ps): what --matmul-dtype bf16 needs.
  static bool cpu_has_bf16_dot();

  // This CPU model in one line, the key --matmul-dtype auto caches its measurement under: CPUID
  // vendor, brand, family / model / stepping and the Highway target the kernels dispatch to.
  static std::string cpu_model_key();

  // The rates of y = x W^T on this backend's pool for a random FP8 W [n_rows, n_cols] (128 x 128
  // block scales) in each arithmetic (bf16: only where cpu_has_bf16_dot()), at 1 token (8 GEMVs
  // back to back per sample) and at `n_tok` tokens; warmed up once, then the fastest of 8 rounds
  // that interleave the arithmetics (backend/cpu/matmul_rates.cc; ~50 ms for [576, 7168] x 64
  // tokens on 2 Zen 5 threads).
  MatmulProbe measure_matmul_rates(int64_t n_rows, int64_t n_cols, int64_t n_tok) const;

  int32_t n_threads() const { return pool_->n_threads(); }
  ThreadPool& pool() const { return *pool_; }
  const Options& options() const { return o_; }

  // Zero-filled host memory on transparent huge pages; kKvCache resident from the start.
  Buffer allocate(size_t bytes, MemoryUse use) const;
  // Scratch for forwards within `lim` of a model with config `cfg`.
  std::unique_ptr<BackendScratch> make_scratch(const ModelConfig& cfg,
                                               const WorkspaceLimits& lim) const;

  // Host memory: the batch is read where it is.
  void begin_forward(const ForwardBatch& /*b*/, BackendScratch& /*s*/) const {}

  // y[n_tok, w.n_rows] = x[n_tok, w.n_cols] W^T, split over the pool by output rows (W8A8:
  // x quantised first into the scratch).
  void linear(const Matrix& w, const float* x, int64_t n_tok, float* y, BackendScratch& s) const;
  // y0 = x W0^T and y1 = x W1^T (one dispatch for short inputs).
  void linear_pair(const Matrix& w0, float* y0, const Matrix& w1, float* y1, const float* x,
                   int64_t n_tok, BackendScratch& s) const;
  // h[i, :] = table row ids[i] - row_begin (plain, unscaled) for i < n; zeros where that row is
  // outside the table (a vocabulary-parallel slice holds the others' rows elsewhere).
  void embed(const Matrix& table, const int32_t* ids, int64_t n, float* h, int64_t row_begin) const;
  // y[i, :width] = rmsnorm(x[i, :width]) * w, rows i < n_rows (y may alias x).
  void rmsnorm_rows(const float* x, const Vector& w, int64_t n_rows, int64_t width, float eps,
                    float* y) const;
  // y[0, n) += x[0, n).
  void add_rows(const float* x, int64_t n, float* y) const;
  // SwiGLU FFN: y[n_tok, d_model] = down(silu(gate x) * up x).
  void ffn(const FfnWeights& f, const float* x, int64_t n_tok, float* y, BackendScratch& s) const;

  // Latent norm (+ V3.2 FP8 simulation) and rope of the new cache rows, rope of the queries.
  void mla_rope_rows(const MlaRopeArgs& a, BackendScratch& s) const;
  // V3.2 indexer keys into the rows, queries and coefficients in place.
  void indexer_rope_quant(const IndexerRopeArgs& a, BackendScratch& s) const;
  // KvCache::store of n rows at slots[0, n).
  void kv_store_rows(KvCache& kv, int32_t i_layer, const int32_t* slots, const float* rows,
                     int32_t n) const;

  // MLA naive ("MHA mode") form for sequence i_seq's new tokens: flash attention over tiles of
  // kMlaPrefillTile cached positions, each tile's K/V expanded through kv_b once for all tokens.
  void mla_prefill(const MlaAttnArgs& a, int32_t i_seq, BackendScratch& s) const;
  // MLA absorbed ("MQA mode") form for n <= kMlaAbsorbChunk tokens toks[j] of sequences seqs[j]:
  // W_UK folded into the query, attention over the cached latents split-K, W_UV after.
  void mla_decode(const MlaAttnArgs& a, const int32_t* toks, const int32_t* seqs, int32_t n,
                  BackendScratch& s) const;
  // V3.2 indexer: scores over the sequence's cached keys and the top-k per token.
  void indexer_select(const IndexerSelectArgs& a, BackendScratch& s) const;
  // Router (noaux_tc), routed experts grouped by expert, shared expert, weighted sum.
  void moe(const MoeArgs& a, BackendScratch& s) const;

 private:
  Options o_;
  std::unique_ptr<ThreadPool> pool_;
};

static_assert(ModelBackend<CpuBackend>);

}  // namespace dss
