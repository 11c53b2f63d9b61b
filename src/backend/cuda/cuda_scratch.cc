#include "backend/cuda/cuda_scratch.h"

#include <algorithm>

#include "backend/cuda/cuda_check.h"

namespace dss {

template <typename T>
T* CudaScratch::device(size_t n) {
  void* p = nullptr;
  cuda_check(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc of scratch (",
             n * sizeof(T), " bytes)");
  device_.push_back(p);
  return static_cast<T*>(p);
}

template <typename T>
T* CudaScratch::pinned(size_t n) {
  void* p = nullptr;
  cuda_check(cudaMallocHost(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMallocHost of ",
             n * sizeof(T), " bytes");
  pinned_.push_back(p);
  return static_cast<T*>(p);
}

CudaScratch::CudaScratch(const ModelConfig& c, const WorkspaceLimits& lim) : limits(lim) {
  const auto T = static_cast<size_t>(lim.max_tokens);
  const auto K = static_cast<size_t>(std::max(c.n_experts_per_tok, 1));
  const auto E = static_cast<size_t>(std::max(c.n_experts, 1));
  const auto d = static_cast<size_t>(c.d_model);
  const auto widest = static_cast<size_t>(
      std::max({c.d_ff, c.d_ff_expert, c.d_ff_expert * std::max(c.n_shared_experts, 1)}));
  attn_chunk = std::max(kMlaAbsorbChunk, std::min(lim.max_tokens, kCudaAttnChunk));
  index_chunk = c.index_topk > 0 ? std::min(lim.max_tokens, kCudaIndexChunk) : 0;
  const auto HR = static_cast<size_t>(c.n_heads) * static_cast<size_t>(c.kv_lora_rank);
  const auto L = static_cast<size_t>(lim.max_kv_len);
  gate = device<float>(T * widest);
  up = device<float>(T * widest);
  xe = device<float>(T * d);
  ye = device<float>(T * d);
  router = device<float>(T * E);
  moe_rows = device<int32_t>(T * K);
  moe_weights = device<float>(T * K);
  q_lat = device<float>(static_cast<size_t>(attn_chunk) * HR);
  o_lat = device<float>(static_cast<size_t>(attn_chunk) * HR);
  part_rows = std::max(attn_chunk, kMlaAbsorbChunk * kCudaDecodeParts);
  part_o = device<float>(static_cast<size_t>(part_rows) * HR);
  part_ml = device<float>(static_cast<size_t>(part_rows) * static_cast<size_t>(c.n_heads) * 2);
  idx_scores = device<float>(static_cast<size_t>(index_chunk) * L);
  if (lim.act_quant) {
    const auto widest_in =
        static_cast<size_t>(std::max({c.d_model, c.q_lora_rank, c.kv_lora_rank, c.n_heads * c.d_v,
                                      c.d_ff, c.d_ff_expert * std::max(c.n_shared_experts, 1)}));
    act_capacity = static_cast<int64_t>(T * widest_in);
    act_codes = device<uint8_t>(T * widest_in);
    act_scales = device<float>(T * widest_in / 128 + T);
    act_x = device<float>(T * widest_in);
  }
  h_router = pinned<float>(T * E);
  h_moe_rows = pinned<int32_t>(T * K);
  h_moe_weights = pinned<float>(T * K);
  h_sel_experts = pinned<int32_t>(T * K);
  h_idx_scores = pinned<float>(static_cast<size_t>(index_chunk) * L);
  h_sel = pinned<int32_t>(T * static_cast<size_t>(std::max(c.index_topk, 1)));
  h_n_sel = pinned<int32_t>(T);
  order.resize(std::max(L, E + 1));
  route_scratch.resize(E + static_cast<size_t>(c.n_expert_groups));
  expert_count.resize(E);
  sel_weights.resize(T * K);
  // Tokens, positions, slots, logit rows and the per-sequence arrays of a full step, and a page
  // table of 64 pages per token; a larger table grows the buffers once (reserve_batch).
  reserve_batch(T * 4 * 16 + T * 64 * 4 + 8 * 256);
}

void CudaScratch::reserve_batch(size_t bytes) {
  if (bytes <= batch_capacity) return;
  if (batch_dev != nullptr) {
    cuda_check(cudaDeviceSynchronize(), "before growing the batch buffers");
    cudaFree(batch_dev);
    cudaFreeHost(batch_host);
    std::erase(device_, static_cast<void*>(batch_dev));
    std::erase(pinned_, static_cast<void*>(batch_host));
  }
  batch_capacity = bytes * 2;
  batch_dev = device<uint8_t>(batch_capacity);
  batch_host = pinned<uint8_t>(batch_capacity);
}

CudaScratch::~CudaScratch() {
  for (void* p : device_) cudaFree(p);
  for (void* p : pinned_) cudaFreeHost(p);
}

}  // namespace dss
