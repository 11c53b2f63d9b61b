// Model: a DeepSeek-V3-family checkpoint loaded onto a backend, and its forward pass: the one
// place that composes the blocks of model/deepseek (embedding, per layer MLA and MoE or dense FFN
// with their residuals, the logits head).
//
// forward() is a pure function of (weights, batch, cache) -> logits: it writes the batch's new
// KV entries into `kv` at batch.kv_write_slots, then returns logits for batch.logit_rows.
// No allocation, locks or policy inside: everything it needs is in `batch` and `ws`.
// Thread-safety: const; one forward at a time (the backend's thread pool runs one dispatch at a
// time); forwards need distinct Workspaces and caches.
#pragma once

#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "base/status.h"
#include "core/forward_batch.h"
#include "dist/mpi_comm.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "kv/kv_cache.h"
#include "model/deepseek/mla.h"
#include "model/deepseek/rope.h"
#include "model/deepseek/weights.h"
#include "model/deepseek/workspace.h"
#include "model/runtime/load_options.h"
#include "model/runtime/matmul_choice.h"

namespace dss {

class CudaBackend;  // backend/cuda/cuda_backend.h (CUDA builds)

class Model {
 public:
  // With opts.dp_attention, tp_group is the DP-attention group instead (ShardSpec::dp_attention).
  // tp_group (not null, size > 1): this process is rank tp_group->rank() of a tensor-parallel
  // group (model/deepseek/shard.h says what each rank holds); every rank of the group must load
  // the same checkpoint with the same options and then call forward with the same batches in
  // the same order (the forward pass sums partial results and gathers logits over the group).
  // The group must outlive the model.
  static Result<std::unique_ptr<Model>> load(const LoadOptions& opts, MpiComm* tp_group = nullptr);
  ~Model();
  // Whether --device cuda can run here: a CUDA build (DSS_CUDA) and a usable CUDA device.
  static bool cuda_available();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return cfg_; }
  const ModelWeights& weights() const { return w_; }
  const Checkpoint& checkpoint() const { return ck_; }
  // The cache layout for this model with latent storage `dtype` (kF32 | kBF16 | kF8E4M3); with
  // the MTP module loaded, one layer more (n_layers: the module's).
  KvLayout kv_layout(int32_t page_size, DType dtype = DType::kF32) const;
  bool has_mtp() const { return !w_.mtp.empty(); }
  // --kv-cache-dtype default: fp8 for V3.2 (the layout its reference simulates), bf16 otherwise.
  DType default_kv_dtype() const;
  int32_t n_threads() const { return be_->n_threads(); }
  bool act_quant_fp8() const { return act_quant_fp8_; }
  // Whether the linear layers run MatmulArith::kBf16Dot (--matmul-dtype bf16, or auto where bf16
  // measured faster on this CPU).
  bool matmul_bf16() const { return matmul_bf16_; }
  // What --matmul-dtype auto resolved to, with the two measured rates (matmul_choice.h); with an
  // explicit f32 / bf16 its `source` is "flag" and no rate is measured.
  const MatmulChoice& matmul_choice() const { return matmul_choice_; }
  const CpuBackend& backend() const { return *be_; }
  // Where the forward pass runs (LoadOptions::device), and that device in words ("cpu", or the
  // CUDA device's name, memory and architecture).
  Device device() const { return cuda_ != nullptr ? Device::kCuda : Device::kCpu; }
  std::string device_name() const;
  // Free memory of the device the model runs on (bytes; 0 on the CPU backend).
  int64_t device_free_bytes() const;
  // A workspace for forwards within `limits` (its activations and scratch made by the backend).
  Workspace workspace(const WorkspaceLimits& limits) const;
  // A KV pool of n_pages pages of `layout` in the backend's memory (resident from the start).
  KvCache make_kv_cache(const KvLayout& layout, int32_t n_pages) const;

  const ShardSpec& shard() const { return shard_; }

  // logits: [batch.logit_rows.size(), n_vocab] f32, on every rank of a tensor-parallel group;
  // with ws.logits_to_rank0_only (the engine: only rank 0 samples) on rank 0 only, the other
  // ranks' left untouched.
  // With ws.limits.mtp, also every token's final-normed hidden state into ws.hidden.
  void forward(const ForwardBatch& batch, KvCache& kv, Workspace& ws, float* logits,
               AttnPath path = AttnPath::kAuto) const;
  // DP attention (shard().dp_attention), a rank with no tokens this step: its part of every MoE
  // layer's token exchange (the experts it holds, for the other ranks' tokens), so the ranks'
  // collectives pair up. Every rank runs forward or idle_forward each step, in lockstep.
  void idle_forward(Workspace& ws) const;

  // The MTP module (has_mtp(); ws.limits.mtp; one rank): token t of `batch` at position p is
  // token p + 1 of its sequence, and prev_hidden [n_tokens, d_model] row t the hidden state at
  // p: the target's final-normed one (ws.hidden of the forward that computed p), or this
  // module's own block output when chaining drafts. The module's decoder block writes its KV
  // (cache layer n_layers) at batch.kv_write_slots and attends to its rows of the positions
  // before. logits [logit_rows, n_vocab]: its head's prediction for position p + 2;
  // block_out [n_tokens, d_model] (may be empty): the block outputs (before shared_head.norm).
  // docs/speculative.md says which tensors and why.
  void mtp_forward(const ForwardBatch& batch, std::span<const float> prev_hidden, KvCache& kv,
                   Workspace& ws, float* logits, std::span<float> block_out) const;

 private:
  Model(ModelConfig cfg, Checkpoint ck) : cfg_(std::move(cfg)), ck_(std::move(ck)), rope_(cfg_) {}
  // --device cuda: the backend, the row-major weights uploaded (model/runtime/device_weights.h).
  Status load_on_cuda(const LoadOptions& opts, const QuantPolicy* convert,
                      const QuantPolicy* lm_head_convert);
  template <ModelBackend B, Communicator C>
  void forward_on(const B& be, C& comm, const ForwardBatch& batch, KvCache& kv, Workspace& ws,
                  float* logits, AttnPath path) const;
  template <Communicator C>
  void gather_logits(C& comm, int32_t n_rows, const Workspace& ws, float* logits) const;
  // One decoder layer on ws.h (attention and FFN with their residuals); KV layer i_kv.
  // comm: the DP-attention group's token exchange in the MoE layers (ShardSpec::dp_attention).
  template <ModelBackend B, Communicator C, typename SumRows>
  void layer_forward(const B& be, C& comm, const LayerWeights& L, int32_t i_kv,
                     const ForwardBatch& b, KvCache& kv, Workspace& ws, AttnPath path,
                     SumRows&& sum_rows) const;

  ModelConfig cfg_;
  Checkpoint ck_;
  ModelWeights w_;
  RopeTable rope_;
  std::unique_ptr<CpuBackend> be_;  // the host pool (loading; the forward unless cuda_)
  // --device cuda: the backend every forward runs on (a function-pointer deleter, so this header
  // needs no CUDA types).
  std::unique_ptr<CudaBackend, void (*)(CudaBackend*)> cuda_{nullptr, nullptr};
  ShardSpec shard_;
  MpiComm* tp_group_ = nullptr;
  bool act_quant_fp8_ = false;
  bool matmul_bf16_ = false;
  MatmulChoice matmul_choice_;
};

}  // namespace dss
