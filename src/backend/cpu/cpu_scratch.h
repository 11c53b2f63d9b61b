// CpuScratch: CpuBackend's private per-forward buffers, sized once for a config and
// WorkspaceLimits (CpuBackend::make_scratch) so no operation allocates. Internal to backend/cpu.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "base/two_stage_jobs.h"

namespace dss {

// The MoE block's row grain (run_two_stage units): one FP8 scale block, 128 rows (4 weight
// tiles): a tile is computed by one thread, the GEMM paths compute a block's bf16 activations
// once per call, and the f32 1-token GEMV runs 4 tiles side by side.
inline constexpr int64_t kMoeRowGrain = kFp8BlockSize;

// Floats of one thread's routing scratch (route_token: n_experts + n_groups), rounded up to a
// 64-byte line so threads routing at once do not share one.
inline size_t route_scratch_stride(const ModelConfig& c) {
  return (static_cast<size_t>(c.n_experts + c.n_expert_groups) + 15) / 16 * 16;
}

struct CpuScratch final : BackendScratch {
  CpuScratch(const ModelConfig& cfg, const WorkspaceLimits& limits);

  WorkspaceLimits limits;
  std::vector<float> rope_cos, rope_sin;  // [d_rope / 2] one token's rotation
  // Absorbed (decode) MLA form: W_UK / W_UV for a chunk of kMlaAbsorbChunk tokens at a time
  // (chunk row j), attention one token at a time, split-K over at most kMlaDecodeMaxParts:
  std::vector<float> q_lat, q_pe;     // [chunk, n_heads, kv_lora_rank], [chunk, n_heads, d_rope]
  std::vector<float> o_lat;           // [chunk, n_heads, kv_lora_rank] merged latent outputs
  std::vector<float> uv;              // [chunk, n_heads * (d_nope + d_v)] W_UV o_lat, kv_b's rows
  std::vector<float> absorb_x;        // [n_threads, chunk, max(d_nope, kv_lora_rank)] one head's
                                      // q_nope / o_lat rows gathered as a matmul operand
  std::vector<float> part_m, part_l;  // [kMlaDecodeMaxParts, n_heads] partial max / sum
  std::vector<float> part_o;          // [kMlaDecodeMaxParts, n_heads, kv_lora_rank]
  std::vector<float> attn_scratch;    // [n_threads, cpu::mla_attn_scratch_floats]
  // Naive (prefill) MLA form, flash attention over tiles of kMlaPrefillTile cached positions:
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
  // FFN / MoE. gate, up: dense FFN [max_tokens, d_ff]; MoE: routed rows in bucket order
  // [max_tokens * n_experts_per_tok, d_ff_expert], then the shared expert's [max_tokens, ...].
  std::vector<float> gate, up;
  std::vector<float> router;            // [max_tokens, n_experts]
  std::vector<float> route_scratch;     // [n_threads, route_scratch_stride(config)]
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
  // W8A8 (limits.act_quant only): a linear layer's input quantised to e4m3 and back,
  // [max(max_tokens * widest linear input, kMlaPrefillTile * kv_lora_rank)] (kv_b runs over one
  // tile of cached positions in the naive MLA form).
  std::vector<float> act_q;
  // V3.2 indexer selection.
  std::vector<float> idx_scores;   // [n_threads, max_kv_len]
  std::vector<int32_t> idx_order;  // [n_threads, max_kv_len]
  // Decode top-k over the threads: the candidates' positions and how many each thread's share
  // gathered.
  std::vector<int32_t> idx_cand;    // [max_kv_len]
  std::vector<int64_t> idx_counts;  // [n_threads]
};

inline CpuScratch& cpu_scratch(BackendScratch& s) { return static_cast<CpuScratch&>(s); }

}  // namespace dss
