// CudaBackend's scratch: device buffers sized once for a config and WorkspaceLimits (no
// allocation per step), the pinned host buffers the host side of the MoE routing and the V3.2
// top-k read and write, and the staged copy of the step's ForwardBatch arrays.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace dss {

// Query tokens per launch of the absorbed attention in a prefill chunk (its q_lat / o_lat rows)
// and tokens per launch of the indexer's scoring (its score rows).
inline constexpr int32_t kCudaAttnChunk = 256;
inline constexpr int32_t kCudaIndexChunk = 64;
// Most split-K parts of one decode token's attention (kernels/cuda/ops_device.h kMaxParts).
inline constexpr int32_t kCudaDecodeParts = 32;

struct CudaScratch final : BackendScratch {
  CudaScratch(const ModelConfig& cfg, const WorkspaceLimits& limits);
  ~CudaScratch() override;
  CudaScratch(const CudaScratch&) = delete;
  CudaScratch& operator=(const CudaScratch&) = delete;

  WorkspaceLimits limits;
  int32_t attn_chunk = 0, index_chunk = 0;
  // Device.
  float* gate = nullptr;         // [max_tokens, widest FFN]
  float* up = nullptr;           // [max_tokens, widest FFN]
  float* xe = nullptr;           // [max_tokens, d_model] one expert's rows
  float* ye = nullptr;           // [max_tokens, d_model]
  float* router = nullptr;       // [max_tokens, n_experts] logits
  int32_t* moe_rows = nullptr;   // [max_tokens * k] tokens, bucketed by expert
  float* moe_weights = nullptr;  // [max_tokens * k]
  float* q_lat = nullptr;        // [attn_chunk, n_heads, kv_lora_rank]
  float* o_lat = nullptr;        // [attn_chunk, n_heads, kv_lora_rank]
  // Split-K partials (kernels/cuda MlaAttendDev) for a decode chunk of kMlaAbsorbChunk tokens at
  // kCudaDecodeParts parts, or a prefill chunk at one part.
  float* part_o = nullptr;   // [part_rows, n_heads, kv_lora_rank]
  float* part_ml = nullptr;  // [part_rows, n_heads, 2]
  int32_t part_rows = 0;
  float* idx_scores = nullptr;  // [index_chunk, max_kv_len]
  // W8A8 (limits.act_quant): a linear layer's input as e4m3 codes with per-token-per-128 scales,
  // and those values back in float32 (the path without cuBLASLt).
  int64_t act_capacity = 0;      // elements: max_tokens x the widest linear input
  uint8_t* act_codes = nullptr;  // [act_capacity]
  float* act_scales = nullptr;   // [act_capacity / 128 + max_tokens]
  float* act_x = nullptr;        // [act_capacity]
  // Pinned host mirrors.
  float* h_router = nullptr;          // [max_tokens, n_experts]
  int32_t* h_moe_rows = nullptr;      // [max_tokens * k]
  float* h_moe_weights = nullptr;     // [max_tokens * k]
  int32_t* h_sel_experts = nullptr;   // [max_tokens, k]
  float* h_idx_scores = nullptr;      // [index_chunk, max_kv_len]
  int32_t* h_sel = nullptr;           // [max_tokens, index_topk]
  int32_t* h_n_sel = nullptr;         // [max_tokens]
  std::vector<int32_t> order;         // [max(max_kv_len, n_experts + 1)] top-k, expert offsets
  std::vector<float> route_scratch;   // [n_experts + n_groups]
  std::vector<int32_t> expert_count;  // [n_experts]
  std::vector<float> sel_weights;     // [max_tokens, k] routing weights
  // The staged batch: span i of the ForwardBatch (host bytes) at device offset offsets[i].
  struct Staged {
    const uint8_t* host = nullptr;
    size_t bytes = 0, offset = 0;
  };
  std::vector<Staged> staged;
  uint8_t* batch_dev = nullptr;   // device copy
  uint8_t* batch_host = nullptr;  // pinned staging
  size_t batch_capacity = 0;
  // Grows the batch buffers to `bytes` (only when a step's page table outgrows them).
  void reserve_batch(size_t bytes);

 private:
  std::vector<void*> device_, pinned_;
  template <typename T>
  T* device(size_t n);
  template <typename T>
  T* pinned(size_t n);
};

inline CudaScratch& cuda_scratch(BackendScratch& s) { return static_cast<CudaScratch&>(s); }

}  // namespace dss
