// The backend seam: every heavy operation of the DeepSeek forward pass, as the model blocks
// (model/deepseek/*) call it. A backend owns compute parallelism (a thread pool, a CUDA stream)
// and the memory the model lives in (allocate: the weights' arena, the KV pool, the activations)
// and the scratch its operations need; the blocks hold the model's logic (which projection feeds
// which, residuals, which rows go to the cache, path choice) and never see a kernel or a thread.
// Design and one decode step: docs/architecture.md "Backend seam".
//
// Contract of every operation:
//   - Pointers are the backend's memory (host for CpuBackend; device for a CUDA backend): the
//     Workspace's buffers, the KvCache's bytes, the weights' data. Shapes are [rows, cols]
//     row-major, f32 unless stated.
//   - Results do not depend on the thread count or on how a step's tokens are grouped (batch
//     invariance, tests/model/invariants_test.cc); the CPU backend is bit-identical to DeepSeek's
//     float32 reference arithmetic in --matmul-dtype f32 (golden tests).
//   - Calls come from the thread that runs the forward pass; a backend object is shared by
//     concurrent forwards only if they pass distinct scratches (BackendScratch).
//   - No allocation: scratch is sized once (make_scratch) for a WorkspaceLimits bound.
//
// A sharded layer (tensor or expert parallel) passes the block its slice (a head range, a
// vocabulary range, a subset of experts) as the weights and shape; the runtime adds the
// communicator call after the block. The operations take shapes from their arguments, never
// from a global config, so they do not know whether they see a shard.
//
// Why a concept (compile-time) rather than virtual functions: design.md rule 6 keeps indirect
// calls out of the per-layer path; the blocks are templates instantiated once per backend
// (model/deepseek/*.cc end with `template ... <CpuBackend>`), and the one runtime choice of
// backend is made per forward step (runtime/model.cc).
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>

#include "base/buffer.h"
#include "core/forward_batch.h"
#include "io/model_config.h"
#include "kv/kv_cache.h"
#include "tensor/matrix.h"

namespace dss {

struct FfnWeights {  // SwiGLU: down(silu(gate x) * up x)
  Matrix gate;       // [d_ff, d_model]
  Matrix up;         // [d_ff, d_model]
  Matrix down;       // [d_model, d_ff]
};

// What an allocation holds. Every allocation is zero-filled. kKvCache is resident from the start
// (a preallocated pool: its memory is paid at start-up, not as the prefix cache fills).
enum class MemoryUse : uint8_t { kWeights, kKvCache, kActivations };

// Bounds a Workspace (and the backend scratch inside it) is sized for.
struct WorkspaceLimits {
  int32_t max_tokens = 1;      // tokens per forward step
  int32_t max_kv_len = 1;      // longest sequence (cached + new) attended to
  int32_t max_logit_rows = 1;  // rows of logits per step
  int32_t n_threads = 1;       // compute threads (per-thread attention and routing scratch)
  bool act_quant = false;      // W8A8 model: the linear layers quantise their inputs to e4m3
  int32_t tp_size = 1;         // tensor-parallel ranks the logits are gathered from
  // The MTP module runs on this workspace (Model::mtp_forward; its eh_proj reads 2 d_model
  // inputs per token), and Model::forward keeps every token's final-normed hidden state.
  bool mtp = false;
  // A device backend (ModelBackend kDeviceMemory): the workspace holds the logits too
  // (Workspace::logits_dev), downloaded at the end of the forward.
  bool device_logits = false;
  // DP attention: ranks of the MoE layers' token exchange (model/runtime/moe_dispatch.h); 0:
  // none. The exchange buffers hold up to ep_ranks x max_tokens rows.
  int32_t ep_ranks = 0;
};

// A backend's private scratch (attention tiles and partials, MoE buckets, top-k buffers, W8A8
// activations), made by the backend for a config and limits and held by the Workspace. Each
// backend derives its own and casts back (a static_cast per operation, no virtual call).
struct BackendScratch {
  virtual ~BackendScratch() = default;
};

// Cached positions per tile of the naive (prefill) MLA form: K/V are expanded through kv_b one
// tile at a time, never for the whole context.
inline constexpr int32_t kMlaPrefillTile = 128;
// Decode (absorbed) split-K: the attended positions are cut into min(kMlaDecodeMaxParts,
// ceil(n / kMlaDecodePart)) equal parts, a function of n only, so results do not depend on the
// thread count; the parts are spread over the threads and merged in order.
inline constexpr int32_t kMlaDecodePart = 256;
inline constexpr int32_t kMlaDecodeMaxParts = 64;
// Absorbed-form tokens whose W_UK / W_UV products run as one batched matmul per head (the tokens
// of a decode step across sequences, in chunks of this many).
inline constexpr int32_t kMlaAbsorbChunk = 16;

// The attention shape of one MLA layer (or of a head shard of it: n_heads is the slice's).
struct MlaShape {
  int32_t n_heads = 0, d_nope = 0, d_rope = 0, d_v = 0, kv_lora_rank = 0;
  float softmax_scale = 1.0f;
  int32_t d_qk() const { return d_nope + d_rope; }
};

// Which positions each token attends to: the V3.2 indexer's selection, sorted ([n_tokens, topk]),
// or every position up to its own (n_sel[t] < 0: dense).
struct AttendedSets {
  const int32_t* sel = nullptr;    // [max_tokens, topk]
  const int32_t* n_sel = nullptr;  // [max_tokens]
  int32_t topk = 0;
};

// One layer's attention inputs shared by the prefill and decode forms.
struct MlaAttnArgs {
  MlaShape shape;
  const Matrix* kv_b = nullptr;    // [n_heads * (d_nope + d_v), kv_lora_rank]: W_UK rows, W_UV
  const Matrix* w_uk_t = nullptr;  // [n_heads * kv_lora_rank, d_nope] (absorbed form)
  const KvCache* kv = nullptr;
  int32_t i_layer = 0;
  const ForwardBatch* batch = nullptr;
  const float* q = nullptr;  // [T, n_heads, d_qk] rotated queries (nope | rope per head)
  AttendedSets attended;
  float* attn = nullptr;  // out [T, n_heads, d_v]
};

// A V3.2 indexer selection over one sequence's cached keys (docs/deepseek-reference.md 2.9).
struct IndexerSelectArgs {
  const KvCache* kv = nullptr;
  int32_t i_layer = 0;
  const ForwardBatch* batch = nullptr;
  int32_t i_seq = 0;
  const float* q = nullptr;     // [T, n_heads, head_dim] quantised queries (e4m3 values in f32)
  const float* coef = nullptr;  // [T, n_heads] per-head score coefficients
  int32_t n_heads = 0, head_dim = 0, topk = 0;
  int32_t* sel = nullptr;    // out [T, topk] (the sequence's tokens' rows)
  int32_t* n_sel = nullptr;  // out [T]: topk, or -1 where every causal position is selected
};

// The step's new MLA cache rows and rotated queries, per token t (docs/deepseek-reference.md
// 2.3-2.4): rows[t, 0:R] = rmsnorm(kv_a[t, 0:R]) * kv_a_norm (V3.2: then act_quant UE8M0 per
// 128 values and back, the reference's FP8 latent); rows[t, R:R+d_rope] = kv_a[t, R:] rotated
// (interleaved pairs) at positions[t]; the rope part of every head of q rotated in place.
struct MlaRopeArgs {
  MlaShape shape;  // n_heads (of q), d_nope, d_rope, kv_lora_rank
  int32_t n_tok = 0;
  const int32_t* positions = nullptr;  // [T]
  const float* rope_freqs = nullptr;   // [d_rope / 2] (YaRN-adjusted)
  const float* kv_a = nullptr;         // [T, kv_lora_rank + d_rope]
  const Vector* kv_a_norm = nullptr;   // [kv_lora_rank]
  float eps = 1e-6f;
  bool fp8_latent = false;  // V3.2
  float* q = nullptr;       // in/out [T, n_heads, d_nope + d_rope]
  float* rows = nullptr;    // out [T, d_row], columns [0, kv_lora_rank + d_rope)
  int32_t d_row = 0;
};

// The V3.2 indexer's keys and queries after their projections (docs/deepseek-reference.md 2.9),
// per token t: key = act_quant(hadamard(rope_half_split(LayerNorm(k[t])))) into
// rows[t, key_offset : key_offset + head_dim] and its scale at rows[t, key_offset + head_dim];
// each head h of q[t] rotated, transformed and quantised in place, and
// coef[t, h] *= n_heads^-0.5 * scale_q(t, h) * head_dim^-0.5.
struct IndexerRopeArgs {
  int32_t n_tok = 0, n_heads = 0, head_dim = 0, d_rope = 0;
  const int32_t* positions = nullptr;  // [T]
  const float* rope_freqs = nullptr;   // [d_rope / 2]
  const float* k_norm_w = nullptr;     // [head_dim] LayerNorm weight
  const float* k_norm_b = nullptr;     // [head_dim] LayerNorm bias
  float* k = nullptr;                  // in [T, head_dim] wk x (overwritten)
  float* q = nullptr;                  // in/out [T, n_heads, head_dim]
  float* coef = nullptr;               // in/out [T, n_heads] weights_proj x
  float* rows = nullptr;               // out [T, d_row]
  int32_t d_row = 0, key_offset = 0;
};

// One MoE layer over the step's T tokens (or an expert shard: `experts` holds the local ones and
// the router still scores all of them).
struct MoeArgs {
  const ModelConfig* cfg = nullptr;  // routing parameters (noaux_tc), expert widths
  const Matrix* router = nullptr;    // [n_experts, d_model]
  const float* router_bias = nullptr;
  const FfnWeights* experts = nullptr;  // [n_experts]; widths from the matrices
  // The experts this rank computes (expert parallel: a slice; the router still scores all and
  // out sums only these and the shared expert). Others' weights may be empty.
  int32_t expert_begin = 0, expert_end = INT32_MAX;
  const FfnWeights* shared = nullptr;  // nullptr: no shared expert
  int32_t n_tok = 0;
  const float* x = nullptr;        // [T, d_model]
  float* out = nullptr;            // [T, d_model]
  int32_t* sel_experts = nullptr;  // out [T, n_experts_per_tok], selection order
  // Expert parallel across DP-attention groups (model/runtime/moe_dispatch.h):
  // sel_weights_out (not null): the routing weights too, [T, n_experts_per_tok];
  // sel_weights_in (not null): no routing; sel_experts is an input with these weights.
  float* sel_weights_out = nullptr;
  const float* sel_weights_in = nullptr;
  int64_t* routed_expert_reads = nullptr;  // += experts with at least one token
};

// The operations a model block may call: CpuBackend (backend/cpu/cpu_backend.h) and, in CUDA
// builds, CudaBackend (backend/cuda/cuda_backend.h); docs/architecture.md "Backend seam".
template <typename B>
concept ModelBackend = requires(const B& be, BackendScratch& s, const ModelConfig& cfg,
                                const WorkspaceLimits& lim, const Matrix& w, const Vector& v,
                                const float* x, float* y, int64_t n, const MlaAttnArgs& attn,
                                const int32_t* ids, const IndexerSelectArgs& idx,
                                const MoeArgs& moe, const FfnWeights& f, const MlaRopeArgs& rope,
                                const IndexerRopeArgs& idx_rope, KvCache& kv) {
  // `bytes` zero-filled bytes of the backend's memory for `use`.
  { be.allocate(size_t{0}, MemoryUse::kWeights) } -> std::same_as<Buffer>;
  { be.make_scratch(cfg, lim) } -> std::same_as<std::unique_ptr<BackendScratch>>;
  { be.n_threads() } -> std::same_as<int32_t>;
  // Whether allocate's memory is a device's (the host cannot read it: Model::forward then
  // writes the logits into the workspace and downloads them).
  { B::kDeviceMemory } -> std::convertible_to<bool>;
  // The step's batch, before its first operation (a device backend uploads its arrays, and the
  // batch's host pointers the blocks pass on resolve to that copy until the next call).
  be.begin_forward(ForwardBatch{}, s);
  // Linear layers (any weight dtype and layout): y[n, w.n_rows] = x[n, w.n_cols] W^T.
  be.linear(w, x, n, y, s);
  // Two products over the same x (fused where the backend can).
  be.linear_pair(w, y, w, y, x, n, s);
  // y[i, :] = row ids[i] - n2 of table w (a vocabulary slice starting at row n2), or zeros
  // where that row is outside w.
  be.embed(w, ids, n, y, n);
  be.rmsnorm_rows(x, v, n, n, 1.0f, y);
  be.add_rows(x, n, y);
  be.ffn(f, x, n, y, s);
  be.mla_rope_rows(rope, s);
  be.indexer_rope_quant(idx_rope, s);
  // Rows [n, KvLayout::d_row] into layer i's cache at slots (the layout's storage dtype).
  be.kv_store_rows(kv, int32_t{0}, ids, x, int32_t{0});
  be.mla_prefill(attn, int32_t{0}, s);
  be.mla_decode(attn, ids, ids, int32_t{0}, s);
  be.indexer_select(idx, s);
  be.moe(moe, s);
};

}  // namespace dss
