// DeepSeek-V3-family weights as views into the memory-mapped checkpoint (zero copy), plus the
// few owned tensors the forward pass derives at load time. Shapes are [rows, cols] in memory
// order; FP8 matrices carry their [ceil(rows/128), ceil(cols/128)] scale grid (tensor/matrix.h).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "backend/backend.h"
#include "base/buffer.h"
#include "base/status.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/deepseek/quant_policy.h"
#include "model/deepseek/shard.h"
#include "tensor/matrix.h"
#include "tensor/quantize.h"

namespace dss {

class ThreadPool;

// DeepSeek-V3.2 lightning indexer of one layer (docs/deepseek-reference.md 2.9).
struct IndexerWeights {
  Matrix wq_b;  // [index_n_heads * index_head_dim, q_lora_rank]; per head [rope | rest]
  Matrix wk;    // [index_head_dim, d_model]
  std::vector<float> k_norm_w;  // [index_head_dim] LayerNorm weight (f32)
  std::vector<float> k_norm_b;  // [index_head_dim] LayerNorm bias (f32)
  Matrix weights_proj;          // [index_n_heads, d_model] (bf16 in checkpoints; f32 compute)
};

// Shapes below name the whole model's n_heads; a tensor-parallel rank holds n_heads (this
// struct's) of them, and its q_b, kv_b, o and w_uk_t rows / columns for those heads only.
struct MlaWeights {
  int32_t n_heads = 0;  // heads held here (config n_heads / ShardSpec::size)
  Matrix q_a;           // [q_lora_rank, d_model]
  Vector q_a_norm;      // [q_lora_rank]
  Matrix q_b;           // [n_heads * (d_nope + d_rope), q_lora_rank]; per head nope first
  Matrix kv_a;          // [kv_lora_rank + d_rope, d_model]
  Vector kv_a_norm;     // [kv_lora_rank]
  Matrix kv_b;          // [n_heads * (d_nope + d_v), kv_lora_rank]; per head W_UK rows then W_UV
  Matrix o;             // [d_model, n_heads * d_v]
  // The absorbed decode query q_lat_h = W_UK_h^T q_nope_h reads W_UK of every head transposed:
  // [n_heads * kv_lora_rank, d_nope], rows [h R, (h + 1) R) are head h's (R = kv_lora_rank).
  // Built at load from kv_b with the same values (FP8 codes and block scales moved when each
  // head's W_UK rows lie in one 128-row scale block, the checkpoints' layout; BF16/F16/F32
  // elements moved; otherwise dequantised to F32), tiled when the other weights are; storage in
  // ModelWeights::owned. The absorbed output o_h = W_UV_h o_lat_h reads kv_b's rows directly.
  Matrix w_uk_t;
  bool has_indexer = false;  // V3.2
  IndexerWeights indexer;
};

struct MoeWeights {
  Matrix router;                    // [n_experts, d_model] (bf16 in checkpoints; f32 compute)
  std::vector<float> router_bias;   // [n_experts] e_score_correction_bias as f32 (selection only)
  std::vector<FfnWeights> experts;  // n_experts x {[d_ff_expert, d_model] ...}
  // Experts held here: [expert_begin, expert_end) (expert parallel: a slice; the others' weights
  // are empty); every expert otherwise, split by rows under tensor parallelism.
  int32_t expert_begin = 0, expert_end = 0;
  FfnWeights shared;  // [n_shared * d_ff_expert, d_model] ...; empty if none
  bool has_shared = false;
};

struct LayerWeights {
  Vector attn_norm;  // [d_model] input_layernorm
  Vector ffn_norm;   // [d_model] post_attention_layernorm
  MlaWeights mla;
  bool is_moe = false;
  FfnWeights dense;  // when !is_moe
  MoeWeights moe;    // when is_moe
};

// DeepSeek's multi-token-prediction module (deepseek-reference.md 2.8; tensors
// model.layers.{n_layers}.*): its draft for position i + 2 reads the target's final-normed
// hidden state at i and the embedding of token i + 1.
struct MtpWeights {
  Vector enorm, hnorm;  // [d_model] RMSNorm of the embedding / of the target's hidden state
  Matrix eh_proj;       // [d_model, 2 d_model]: the normed embedding's columns first
  Matrix embed;         // [n_vocab, d_model] its own copy of the embedding
  LayerWeights block;   // a whole decoder layer (MLA + MoE), KV layer n_layers of the cache
  Vector head_norm;     // [d_model] shared_head.norm
  Matrix head;          // [n_vocab, d_model] shared_head.head
};

struct ModelWeights {
  // Vocabulary-parallel (ShardSpec): embed and lm_head hold rows [vocab_begin, vocab_begin +
  // their n_rows) of the whole vocabulary.
  int64_t vocab_begin = 0;
  Matrix embed;       // [n_vocab, d_model]
  Vector final_norm;  // [d_model]
  Matrix lm_head;     // [n_vocab, d_model]
  std::vector<LayerWeights> layers;
  std::vector<MtpWeights> mtp;  // the MTP module when loaded (load_weights' `mtp`), else empty
  // Bytes by dtype name (F8_E4M3 includes its scales' F32 bytes under "F32"; I8 its row scales).
  std::vector<std::pair<std::string, size_t>> bytes_by_dtype;
  // Weights converted or tiled at load (`--weight-dtype`, `--weight-layout`): the Matrix views
  // above point into these while loading; load_weights then moves the ones a view reads into
  // `arena` (and drops the others: a conversion's row-major copy that was then tiled), so a
  // loaded model's `owned` is empty.
  std::vector<OwnedMatrix> owned;
  // One buffer of the backend's memory (MemoryUse::kWeights; on the CPU backend transparent huge
  // pages, base/huge_buffer.h) holding every converted or tiled
  // matrix and its scales, 64-byte aligned: a decode or prefill step streams ~all of it, and 4 KiB
  // pages cost a page walk per 4 KiB (a DRAM-latency miss in a bandwidth-bound GEMV). On the dev
  // VM 4 KiB pages also stalled a matrix read after a pause (lm_head after a prefill: 16-183 ms
  // instead of 5); the cause there was not pinned down.
  Buffer arena;
  bool arena_from_cache = false;  // `arena` is a --weight-cache file mapped read-only
};

// Calls fn(Matrix&) on every matrix view of w (embedding, attention incl. W_UK^T and the V3.2
// indexer, router, FFNs and experts, lm_head), in the order a forward pass reads them: the
// embedding, then per layer q_a, kv_a, q_b, the indexer's wk, wq_b and weights_proj
// (indexer_keys, before the attention), W_UK^T, kv_b, o, the router, each expert's gate, up and
// down, the shared expert or the dense FFN; lm_head; then the MTP module's (eh_proj, its
// embedding, its layer as above, its head). place_weights lays the weights out in this order.
template <typename Fn>
void for_each_matrix(ModelWeights& w, Fn&& fn) {
  auto ffn = [&](FfnWeights& f) {
    fn(f.gate);
    fn(f.up);
    fn(f.down);
  };
  auto layer = [&](LayerWeights& L) {
    MlaWeights& a = L.mla;
    for (Matrix* m : {&a.q_a, &a.kv_a, &a.q_b}) fn(*m);
    if (a.has_indexer) {
      for (Matrix* m : {&a.indexer.wk, &a.indexer.wq_b, &a.indexer.weights_proj}) fn(*m);
    }
    for (Matrix* m : {&a.w_uk_t, &a.kv_b, &a.o}) fn(*m);
    if (L.is_moe) {
      fn(L.moe.router);
      for (FfnWeights& e : L.moe.experts) ffn(e);
      if (L.moe.has_shared) ffn(L.moe.shared);
    } else {
      ffn(L.dense);
    }
  };
  fn(w.embed);
  for (LayerWeights& L : w.layers) layer(L);
  fn(w.lm_head);
  for (MtpWeights& m : w.mtp) {
    fn(m.eh_proj);
    fn(m.embed);
    layer(m.block);
    fn(m.head);
  }
}

// Looks up and validates every tensor the config implies: presence, dtype (F8 needs its
// weight_scale_inv of the right shape, I8 its weight_scale [rows, 1] of finite positive F32),
// shape. Errors name the file and the tensor. With `convert`, the tensors the policy selects are
// converted into owned buffers (ModelWeights::owned) with the same rules as `dsserve convert`.
// With `tile`, every matrix the CPU kernels can read tiled (tensor/tiled_layout.h; not the
// embedding) is then repacked into the weight arena; otherwise the views stay on the mapping.
// `lm_head_convert` (`--lm-head-dtype`), when set, converts lm_head (which `convert`'s default
// policy keeps as stored) to its `to`. With `bf16_dot` (`--matmul-dtype bf16`; needs `tile` to
// change anything), the tiled FP8 / BF16 projections, FFNs, experts and lm_head get
// MatmulArith::kBf16Dot, and those with an even column count the kTiledPairs layout that
// arithmetic reads fastest (tensor/matrix.h); the router and the indexer stay kF32 / kTiled.
// `shard`: this rank's part of a tensor- / expert-parallel group (model/deepseek/shard.h); the
// shard's rows are views of the mapped file where whole rows are kept, so a rank reads and keeps
// ~1/size of the split tensors. `mtp`: also load the MTP module (config num_nextn_predict_layers
// >= 1; an error naming the checkpoint otherwise; not with a shard). `cache_dir`: the arena's
// --weight-cache directory (weight_placement.h; empty: none).
// `allocate` makes the arena (the backend's allocate for MemoryUse::kWeights; empty: host
// memory). The matrices no conversion or tiling touches stay views of the mapped file, which the
// CPU backend reads in place. The repack and the arena are place_weights' (weight_placement.h):
// chunks over `pool` (null: the calling thread), releasing the mapped pages each has read.
using WeightAllocator = std::function<Buffer(size_t bytes)>;
Result<ModelWeights> load_weights(const Checkpoint& ck, const ModelConfig& cfg,
                                  const QuantPolicy* convert = nullptr, bool tile = false,
                                  const QuantPolicy* lm_head_convert = nullptr,
                                  bool bf16_dot = false, const WeightAllocator& allocate = {},
                                  const ShardSpec& shard = {}, ThreadPool* pool = nullptr,
                                  bool mtp = false, const std::string& cache_dir = {});

}  // namespace dss
