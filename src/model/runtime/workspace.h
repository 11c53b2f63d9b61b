// Workspace: the per-step activation arena of Model::forward, allocated once for the largest
// step it will see, so forward itself never allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/two_stage_jobs.h"
#include "io/model_config.h"
#include "tensor/matrix.h"

namespace dss {

// Cached positions per tile of the naive (prefill) MLA form: K/V are expanded through kv_b one
// tile at a time, never for the whole context.
inline constexpr int32_t kMlaPrefillTile = 128;

// Decode (absorbed) split-K: the attended positions are cut into min(kMlaDecodeMaxParts,
// ceil(n / kMlaDecodePart)) equal parts, a function of n only, so results do not depend on the
// thread count; the parts are spread over the pool and merged in order.
inline constexpr int32_t kMlaDecodePart = 256;
inline constexpr int32_t kMlaDecodeMaxParts = 64;
// Absorbed-form tokens whose W_UK / W_UV products run as one batched matmul per head (the tokens
// of a decode step across sequences, in chunks of this many).
inline constexpr int32_t kMlaAbsorbChunk = 16;

// The MoE block's row grain (Model::moe's run_two_stage units): one FP8 scale block, 128 rows
// (4 weight tiles): a tile is computed by one thread, the GEMM paths compute a block's bf16
// activations once per call, and the f32 1-token GEMV runs 4 tiles side by side (a cut at tile
// grain left calls of 1-2 tiles, latency bound, when the bf16-dot GEMV ran 4 too; since the
// fourteenth session it runs 1-2 tokens one tile at a time, and this grain was not re-measured).
inline constexpr int64_t kMoeRowGrain = kFp8BlockSize;
// Floats of one thread's routing scratch (route_token: n_experts + n_groups), rounded up to a
// 64-byte line so threads routing at once do not share one (Workspace::route_scratch).
inline size_t route_scratch_stride(const ModelConfig& c) {
  return (static_cast<size_t>(c.n_experts + c.n_expert_groups) + 15) / 16 * 16;
}

struct WorkspaceLimits {
  int32_t max_tokens = 1;      // tokens per forward step
  int32_t max_kv_len = 1;      // longest sequence (cached + new) attended to
  int32_t max_logit_rows = 1;  // rows of logits per step
  int32_t n_threads = 1;       // compute threads (per-thread attention and routing scratch)
  bool act_quant = false;      // W8A8 model (Model::act_quant_fp8): allocate Workspace::act_q
};

// Discrete decisions of one forward pass, recorded only when Workspace::trace is set (tests
// compare them with the golden `decisions`). Indexed [layer][token of the step].
struct ForwardTrace {
  std::vector<std::vector<std::vector<int32_t>>> experts;    // sorted expert ids (MoE layers)
  std::vector<std::vector<std::vector<int32_t>>> index_sel;  // sorted selected positions (V3.2)
};

struct Workspace {
  Workspace(const ModelConfig& cfg, const WorkspaceLimits& limits);

  WorkspaceLimits limits;
  // Residual stream and per-layer activations, [max_tokens, width] row-major.
  std::vector<float> h, xn, tmp;          // width d_model
  std::vector<float> q_a;                 // q_lora_rank
  std::vector<float> q;                   // n_heads * d_qk
  std::vector<float> kv_a;                // kv_lora_rank + d_rope
  std::vector<float> attn;                // n_heads * d_v
  std::vector<float> rope_cos, rope_sin;  // d_rope / 2
  // Attention scratch. Attention reads the paged cache in place (kernels/cpu/mla_attn.h); nothing
  // here grows with the context except the indexer's per-position scores and the tile flags.
  std::vector<float>
      kv_new;  // [max_tokens, d_row] the step's new cache rows (f32, KvLayout::d_row)
  // Absorbed (decode) form: W_UK / W_UV for a chunk of kMlaAbsorbChunk tokens at a time (chunk
  // row j), attention one token at a time, split-K over at most kMlaDecodeMaxParts:
  std::vector<float> q_lat, q_pe;     // [chunk, n_heads, kv_lora_rank], [chunk, n_heads, d_rope]
  std::vector<float> o_lat;           // [chunk, n_heads, kv_lora_rank] merged latent outputs
  std::vector<float> uv;              // [chunk, n_heads * (d_nope + d_v)] W_UV o_lat, kv_b's rows
  std::vector<float> absorb_x;        // [n_threads, chunk, max(d_nope, kv_lora_rank)] one head's
                                      // q_nope / o_lat rows gathered as a matmul operand
  std::vector<float> part_m, part_l;  // [kMlaDecodeMaxParts, n_heads] partial max / sum
  std::vector<float> part_o;          // [kMlaDecodeMaxParts, n_heads, kv_lora_rank]
  std::vector<float> attn_scratch;    // [n_threads, cpu::mla_attn_scratch_floats]
  // Naive (prefill) form, flash attention over tiles of kMlaPrefillTile cached positions:
  std::vector<float> tile_lat, tile_pe;  // [tile, kv_lora_rank], [tile, d_rope] decoded rows
  std::vector<float> tile_kv;            // [tile, n_heads * (d_nope + d_v)] K_nope/V of the tile
  std::vector<float> run_m, run_l;       // [n_heads, max_tokens] online softmax max / sum
  std::vector<float> tile_pet;           // [d_rope, tile] the tile's rope keys transposed
  std::vector<int32_t> tile_nvalid;      // [max_tokens] a token's valid length in the tile
  // Per thread (one head at a time): the head's nope keys transposed [n_threads, d_nope, tile],
  // scores / probabilities [n_threads, max_tokens, tile], softmax corrections [n_threads,
  // max_tokens].
  std::vector<float> tile_kt, tile_s, tile_corr;
  std::vector<uint8_t> tile_used;  // [max_kv_len / tile + 1] tiles some token attends to
  // FFN / MoE scratch.
  // gate, up: dense FFN [max_tokens, d_ff]; MoE: routed rows in bucket order
  // [max_tokens * n_experts_per_tok, d_ff_expert], then the shared expert's [max_tokens, ...].
  std::vector<float> gate, up;
  std::vector<float> router;            // [max_tokens, n_experts]
  std::vector<float> route_scratch;     // [n_threads, route_scratch_stride(config)]
  std::vector<int32_t> sel_experts;     // [max_tokens, n_experts_per_tok]
  std::vector<float> sel_weights;       // [max_tokens, n_experts_per_tok]
  std::vector<int32_t> expert_offsets;  // [n_experts + 1]
  std::vector<int32_t> expert_cursor;   // [n_experts]
  std::vector<int32_t> expert_tokens;   // [max_tokens * n_experts_per_tok]
  std::vector<float> expert_weights;    // [max_tokens * n_experts_per_tok]
  std::vector<int32_t> expert_pos;  // bucket position of (token t, choice k) at t * k_per_tok + k
  std::vector<float> xe;            // [max_tokens * n_experts_per_tok, d_model] bucket order
  std::vector<float> ye;            // xe's rows, then the shared expert's [max_tokens, d_model]
  // The expert jobs' gate/up and down units (run_two_stage): min(n_experts, max_tokens * k)
  // routed jobs plus the shared one, at most ceil(max(d_ff, max(n_shared_experts, 1) *
  // d_ff_expert) / kMoeRowGrain) + ceil(d_model / kMoeRowGrain) units each.
  TwoStageClaims moe_claims;
  std::vector<float> logit_in;  // [max_logit_rows, d_model]
  // W8A8 (limits.act_quant only): a matmul input quantised to e4m3 and back,
  // [max(max_tokens * widest matmul input, kMlaPrefillTile * kv_lora_rank)] (kv_b runs over one
  // tile of cached positions in the naive MLA form).
  std::vector<float> act_q;
  // V3.2 indexer scratch.
  std::vector<float> idx_q;        // [max_tokens, index_n_heads * index_head_dim]
  std::vector<float> idx_k;        // [max_tokens, index_head_dim]
  std::vector<float> idx_w;        // [max_tokens, index_n_heads] head coefficients
  std::vector<float> idx_scores;   // [n_threads, max_kv_len]
  std::vector<int32_t> idx_order;  // [n_threads, max_kv_len]
  // Decode top-k over the threads (Model::indexer_select): the candidates' positions and how
  // many each thread's share gathered.
  std::vector<int32_t> idx_cand;    // [max_kv_len]
  std::vector<int64_t> idx_counts;  // [n_threads]
  std::vector<int32_t> sel;         // [max_tokens, index_topk] selected positions (sorted)
  std::vector<int32_t> n_sel;       // [max_tokens]; -1: every position <= the token's own
  ForwardTrace* trace = nullptr;    // tests only: record routing and index decisions
  // Routed experts whose weights the MoE layers read (an expert counts once per layer and
  // forward, however many of the forward's tokens chose it), summed over every forward since
  // construction (callers take differences): `dsserve bench-model`'s weight bytes per decode step
  // at batch > 1.
  int64_t routed_expert_reads = 0;
};

}  // namespace dss
