// Model: a DeepSeek-V3-family checkpoint loaded for CPU inference, and its forward pass.
//
// forward() is a pure function of (weights, batch, cache) -> logits: it writes the batch's new
// KV entries into `kv` at batch.kv_write_slots, then returns logits for batch.logit_rows.
// No allocation, locks or policy inside: everything it needs is in `batch` and `ws`.
// Thread-safety: const; concurrent forwards need distinct Workspaces and caches.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "base/thread_pool.h"
#include "core/forward_batch.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "kv/kv_cache.h"
#include "model/deepseek/rope.h"
#include "model/deepseek/weights.h"
#include "model/runtime/workspace.h"

namespace dss {

// Which MLA form a sequence uses. kAuto: naive (expanded K/V, "MHA mode") for prefill chunks of
// more than one token, absorbed (attention over the cached 512+64 latent, "MQA mode") for
// single-token decode. The forced modes exist for tests (the two must agree).
enum class AttnPath { kAuto, kNaive, kAbsorbed };

struct LoadOptions {
  std::string dir;        // checkpoint directory (config.json + safetensors)
  int32_t n_threads = 0;  // compute threads (0: all hardware threads)
  // --weight-dtype: "" keeps the checkpoint's dtypes (memory-mapped, zero copy); bf16 | fp8 | int8
  // converts the linear weights at load into owned buffers (QuantPolicy's default set).
  std::string weight_dtype;
  // --act-quant: "none" | "fp8" (W8A8: activations entering FP8 matmuls are quantised per token
  // per 128 channels, kernels/cpu/act_quant.h; the Workspace needs WorkspaceLimits::act_quant).
  std::string act_quant = "none";
  // --weight-layout: "tiled" repacks the linear weights at load into the kernels' tiled layout
  // (tensor/matrix.h; an owned copy, faster GEMV); "mmap" reads them in place from the
  // memory-mapped checkpoint (zero copy, row-major). Same results either way, bit for bit.
  std::string weight_layout = "tiled";
  // --lm-head-dtype: "" keeps lm_head as stored (BF16 in DeepSeek's releases: --weight-dtype
  // leaves it alone); bf16 | fp8 | int8 converts it at load (fp8: 128x128 blocks). lm_head is
  // the largest single read of a decode step on small models (ds-mini: 265 of 430 MB in BF16).
  std::string lm_head_dtype;
  // --matmul-dtype: the arithmetic of the tiled FP8 / BF16 linear layers (tensor/matrix.h
  // MatmulArith): "f32" (DeepSeek's float32 reference arithmetic; the default here) | "bf16" (x
  // rounded to bf16, AVX512-BF16 dot products, as DeepSeek's bf16 inference; an error on CPUs
  // without AVX512-BF16) | "auto" (bf16 where the CPU has it, else f32). The router, the V3.2
  // indexer, the absorbed-attention W_UK and INT8 weights always stay f32.
  std::string matmul_dtype = "f32";
};

class Model {
 public:
  static Result<std::unique_ptr<Model>> load(const LoadOptions& opts);

  const ModelConfig& config() const { return cfg_; }
  const ModelWeights& weights() const { return w_; }
  const Checkpoint& checkpoint() const { return ck_; }
  // The cache layout for this model with latent storage `dtype` (kF32 | kBF16 | kF8E4M3).
  KvLayout kv_layout(int32_t page_size, DType dtype = DType::kF32) const;
  // --kv-cache-dtype default: fp8 for V3.2 (the layout its reference simulates), bf16 otherwise.
  DType default_kv_dtype() const;
  int32_t n_threads() const { return pool_->n_threads(); }
  bool act_quant_fp8() const { return act_quant_fp8_; }
  // Whether the linear layers run MatmulArith::kBf16Dot (--matmul-dtype bf16, or auto on a CPU
  // with AVX512-BF16).
  bool matmul_bf16() const { return matmul_bf16_; }
  ThreadPool& pool() const { return *pool_; }

  // logits: [batch.logit_rows.size(), n_vocab] f32.
  void forward(const ForwardBatch& batch, KvCache& kv, Workspace& ws, float* logits,
               AttnPath path = AttnPath::kAuto) const;

 private:
  Model(ModelConfig cfg, Checkpoint ck) : cfg_(std::move(cfg)), ck_(std::move(ck)), rope_(cfg_) {}
  void mla(int32_t i_layer, const ForwardBatch& b, KvCache& kv, Workspace& ws, AttnPath path) const;
  void mla_naive(int32_t i_layer, const ForwardBatch& b, int32_t i_seq, const KvCache& kv,
                 Workspace& ws) const;
  // The absorbed form for n <= kMlaAbsorbChunk tokens toks[j] of sequences seqs[j].
  void mla_absorbed(int32_t i_layer, const ForwardBatch& b, const int32_t* toks,
                    const int32_t* seqs, int32_t n, const KvCache& kv, Workspace& ws) const;
  // y = W x split over the thread pool by output rows.
  void mm(const Matrix& w, const float* x, int64_t n_tok, float* y) const;
  void ffn(const FfnWeights& f, int32_t n_tok, int32_t d_ff, const float* x, float* out,
           Workspace& ws) const;
  void moe(int32_t i_layer, const MoeWeights& m, int32_t n_tok, Workspace& ws) const;
  // The experts one at a time through ffn() (the W8A8 path); ws.expert_* already bucketed.
  void moe_per_expert(const MoeWeights& m, int32_t n_tok, Workspace& ws) const;
  // The router, each token's experts and weights (ws.sel_*), and the (token, weight) pairs in
  // bucket order by expert (ws.expert_offsets / tokens / weights / pos); part of moe().
  void moe_route(int32_t i_layer, const MoeWeights& m, int32_t n_tok, Workspace& ws) const;
  // V3.2 indexer: keys (cache) and query scores for the step's tokens, then per-token selections.
  // Keys go into ws.kv_new (the step's new rows); selection reads the cache's indexer keys.
  void indexer_keys(int32_t i_layer, const ForwardBatch& b, Workspace& ws) const;
  void indexer_select(int32_t i_layer, const ForwardBatch& b, int32_t i_seq, const KvCache& kv,
                      Workspace& ws) const;

  ModelConfig cfg_;
  Checkpoint ck_;
  ModelWeights w_;
  RopeTable rope_;
  std::unique_ptr<ThreadPool> pool_;
  bool act_quant_fp8_ = false;
  bool matmul_bf16_ = false;
};

}  // namespace dss
