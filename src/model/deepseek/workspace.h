// Workspace: the per-step activation arena of Model::forward, allocated once for the largest
// step it will see, so forward itself never allocates. It holds the activations the model blocks
// pass between each other, carved from one buffer of the backend's memory (MemoryUse::
// kActivations: device memory on a device backend), and the backend's own scratch (made by the
// backend). Model::workspace makes both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "io/model_config.h"

namespace dss {

// Discrete decisions of one forward pass, recorded only when Workspace::trace is set (tests
// compare them with the golden `decisions`). Indexed [layer][token of the step].
struct ForwardTrace {
  std::vector<std::vector<std::vector<int32_t>>> experts;    // sorted expert ids (MoE layers)
  std::vector<std::vector<std::vector<int32_t>>> index_sel;  // sorted selected positions (V3.2)
};

struct Workspace {
  // Bytes of the activation buffer for `cfg` within `limits`.
  static size_t activation_bytes(const ModelConfig& cfg, const WorkspaceLimits& limits);
  // `activations`: zero-filled, at least activation_bytes; the spans below view it.
  Workspace(const ModelConfig& cfg, const WorkspaceLimits& limits, Buffer activations,
            std::unique_ptr<BackendScratch> backend_scratch);

  WorkspaceLimits limits;
  // Residual stream and per-layer activations, [max_tokens, width] row-major.
  std::span<float> h, xn, tmp;  // width d_model
  std::span<float> q_a;         // q_lora_rank
  std::span<float> q;           // n_heads * d_qk
  std::span<float> kv_a;        // kv_lora_rank + d_rope
  std::span<float> attn;        // n_heads * d_v
  // [max_tokens, d_row] the step's new cache rows (f32, KvLayout::d_row): latent, rope key and
  // (V3.2) the indexer key; attention reads the paged cache in place.
  std::span<float> kv_new;
  std::span<int32_t> sel_experts;  // [max_tokens, n_experts_per_tok] (MoE routing, per layer)
  std::span<float> logit_in;       // [max_logit_rows, d_model]
  // Tensor parallel (limits.tp_size > 1; else empty): this rank's logits of its vocabulary slice
  // [max_logit_rows, n_vocab / tp_size], and every rank's, gathered [tp_size, max_logit_rows,
  // n_vocab / tp_size].
  std::span<float> logit_shard, logit_gather;
  // A device backend (limits.device_logits; else empty): the logits [max_logit_rows, n_vocab]
  // before Model::forward downloads them to its caller's host buffer.
  std::span<float> logits_dev;
  // V3.2 indexer (empty spans otherwise).
  std::span<float> idx_q;    // [max_tokens, index_n_heads * index_head_dim]
  std::span<float> idx_k;    // [max_tokens, index_head_dim]
  std::span<float> idx_w;    // [max_tokens, index_n_heads] head coefficients
  std::span<int32_t> sel;    // [max_tokens, index_topk] selected positions (sorted)
  std::span<int32_t> n_sel;  // [max_tokens]; -1: every position <= the token's own
  // MTP (limits.mtp; empty spans otherwise): every token's final-normed hidden state as
  // Model::forward leaves it, [max_tokens, d_model], and the MTP module's input rows
  // [max_tokens, 2 d_model] (normed embedding | normed hidden state).
  std::span<float> hidden, mtp_in;
  // DP attention's MoE token exchange (limits.ep_ranks = S > 0; empty otherwise;
  // model/runtime/moe_dispatch.h). A sent row is [d_model floats | n_experts_per_tok expert ids
  // (int32 bits) | their weights]: W = d_model + 2 n_experts_per_tok floats.
  std::span<float> ep_send, ep_recv;  // [S * max_tokens, W] rows out / in, by rank
  std::span<float> ep_out, ep_back;   // [S * max_tokens, d_model] partial sums out / back
  std::span<float> ep_x, ep_y;        // [max_tokens, d_model] one chunk of received rows
  std::span<float> ep_weights;        // [max_tokens, n_experts_per_tok] routing weights
  std::span<int32_t> ep_ids;          // [max_tokens, n_experts_per_tok] a chunk's experts
  std::span<int32_t> ep_tokens;       // [S * max_tokens] the token of each sent row
  std::span<int64_t> ep_counts;       // [S, S] rows rank p sends rank q (allgathered)
  std::span<int64_t> ep_layout;       // [4, S] all_to_all_v counts and displacements
  // The backend's scratch (attention partials and tiles, MoE buckets, top-k buffers, W8A8
  // activations), sized for the same limits.
  std::unique_ptr<BackendScratch> backend;
  Buffer activations;             // the memory the spans above view
  ForwardTrace* trace = nullptr;  // tests only: record routing and index decisions
  // Routed experts whose weights the MoE layers read (an expert counts once per layer and
  // forward, however many of the forward's tokens chose it), summed over every forward since
  // construction (callers take differences): `dsserve bench-model`'s weight bytes per decode step
  // at batch > 1.
  int64_t routed_expert_reads = 0;
  // Tensor parallel: bytes this rank handed to the group's collectives (each allreduce's and the
  // logit allgather's payload), summed over every forward since construction.
  int64_t collective_bytes = 0;
  int64_t collective_ns = 0;  // and the wall time spent in them (steady clock)
  // Tensor parallel: gather the logits to rank 0 only (its caller alone reads them) instead of
  // to every rank: a gather instead of an allgather.
  bool logits_to_rank0_only = false;
};

}  // namespace dss
