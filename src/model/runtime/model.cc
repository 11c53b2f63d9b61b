#include "model/runtime/model.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/phase_timer.h"
#include "dist/local_comm.h"
#include "model/deepseek/embed_head.h"
#include "model/deepseek/mlp.h"
#include "model/deepseek/moe.h"
#include "model/runtime/moe_dispatch.h"
#if DSS_CUDA
#include "backend/cuda/cuda_backend.h"
#include "model/runtime/device_weights.h"
#endif

namespace dss {

namespace {

// --matmul-dtype as run: explicit f32 / bf16 as given; auto measured (matmul_choice.h) where both
// arithmetics apply (`applicable`: tiled weights, no W8A8), else f32. A tensor-parallel group
// runs rank 0's choice on every rank (their measurements may differ by noise).
MatmulChoice resolve_matmul_dtype(MatmulDType flag, bool applicable, int32_t n_threads,
                                  MpiComm* tp_group) {
  MatmulChoice c;
  if (flag != MatmulDType::kAuto) {
    c.dtype = flag;
    c.source = "flag";
    return c;
  }
  if (!applicable) {
    c.source = "not-applicable";
    return c;
  }
  const CpuBackend probe(CpuBackend::Options{n_threads});
  c = choose_matmul_dtype_auto(probe);
  if (tp_group != nullptr) {
    int32_t bf16 = c.dtype == MatmulDType::kBf16 ? 1 : 0;
    tp_group->broadcast(std::span<int32_t>(&bf16, 1), 0);
    c.dtype = bf16 != 0 ? MatmulDType::kBf16 : MatmulDType::kF32;
  }
  return c;
}

}  // namespace

Result<std::unique_ptr<Model>> Model::load(const LoadOptions& opts, MpiComm* tp_group) {
  DSS_ASSIGN_OR_RETURN(ModelConfig cfg, ModelConfig::load(opts.dir));
  ShardSpec shard;
  if (tp_group != nullptr && tp_group->size() > 1)
    shard = ShardSpec{tp_group->rank(), tp_group->size(), opts.expert_parallel, opts.dp_attention};
  DSS_ASSIGN_OR_RETURN(Checkpoint ck, Checkpoint::open(opts.dir));
  std::unique_ptr<Model> m(new Model(std::move(cfg), std::move(ck)));
  m->shard_ = shard;
  m->tp_group_ = shard.sharded() ? tp_group : nullptr;
  m->act_quant_fp8_ = opts.act_quant == ActQuant::kFp8;
  const bool tile = opts.weight_layout == WeightStorage::kTiled;
  if (opts.matmul_dtype == MatmulDType::kBf16) {
    if (!CpuBackend::cpu_has_bf16_dot())
      return Status::error("--matmul-dtype bf16: this CPU has no AVX512-BF16 (vdpbf16ps); use f32");
    if (!tile) return Status::error("--matmul-dtype bf16 needs --weight-layout tiled");
    if (m->act_quant_fp8_) return Status::error("--matmul-dtype bf16 excludes --act-quant fp8");
  }
  const int32_t n_threads =
      opts.n_threads > 0 ? opts.n_threads
                         : static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  const bool cuda = opts.device == Device::kCuda;
  m->matmul_choice_ = resolve_matmul_dtype(opts.matmul_dtype, tile && !m->act_quant_fp8_ && !cuda,
                                           n_threads, m->tp_group_);
  m->matmul_bf16_ = m->matmul_choice_.dtype == MatmulDType::kBf16;
  const bool ue8m0 = m->cfg_.quant.ue8m0 || m->cfg_.arch == ModelArch::kDeepseekV32;
  const bool convert = opts.weight_dtype != WeightDType::kAsStored;
  const bool convert_lm_head = opts.lm_head_dtype != WeightDType::kAsStored;
  QuantPolicy policy, lm_head_policy;
  if (convert) {
    policy.to = converted_dtype(opts.weight_dtype);
    policy.ue8m0 = ue8m0;
  }
  if (convert_lm_head) {
    lm_head_policy.to = converted_dtype(opts.lm_head_dtype);
    lm_head_policy.ue8m0 = ue8m0;
    lm_head_policy.exclude.clear();
  }
  m->be_ = std::make_unique<CpuBackend>(
      CpuBackend::Options{n_threads, m->act_quant_fp8_, m->cfg_.quant.ue8m0, m->matmul_bf16_});
  if (cuda) {
    DSS_RETURN_IF_ERROR(m->load_on_cuda(opts, convert ? &policy : nullptr,
                                        convert_lm_head ? &lm_head_policy : nullptr));
    return m;
  }
  const CpuBackend& be = *m->be_;
  DSS_ASSIGN_OR_RETURN(m->w_, load_weights(
                                  m->ck_, m->cfg_, convert ? &policy : nullptr, tile,
                                  convert_lm_head ? &lm_head_policy : nullptr, m->matmul_bf16_,
                                  [&be](size_t n) { return be.allocate(n, MemoryUse::kWeights); },
                                  shard, &be.pool(), opts.mtp, opts.weight_cache_dir));
  return m;
}

Model::~Model() = default;

Status Model::load_on_cuda(const LoadOptions& opts, const QuantPolicy* convert,
                           const QuantPolicy* lm_head_convert) {
#if DSS_CUDA
  auto refuse = [](const char* what) {
    return Status::error("--device cuda: ", what, " is not implemented on the CUDA backend yet");
  };
  if (shard_.sharded()) return refuse("tensor / expert parallelism and DP attention (NCCL)");
  if (opts.mtp) return refuse("--speculative-algorithm NEXTN (the MTP module)");
  if (!opts.weight_cache_dir.empty()) return refuse("--weight-cache");
  if (matmul_bf16_) return refuse("--matmul-dtype bf16");
  // Data-parallel replicas started by mpirun on one host take the host's devices in turn.
  CudaBackend::Options co;
  co.act_quant_fp8 = act_quant_fp8_;
  co.act_quant_ue8m0 = cfg_.quant.ue8m0;
  if (const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK"); local != nullptr)
    co.device = std::atoi(local) % std::max(1, CudaBackend::device_count());
  DSS_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> cuda, CudaBackend::create(co));
  cuda_ = decltype(cuda_)(cuda.release(), [](CudaBackend* p) { delete p; });
  // Row-major weights in their checkpoint dtypes (converted first when asked), then uploaded.
  DSS_ASSIGN_OR_RETURN(w_, load_weights(ck_, cfg_, convert, /*tile=*/false, lm_head_convert,
                                        /*bf16_dot=*/false, {}, shard_, &be_->pool()));
  DSS_ASSIGN_OR_RETURN(const size_t bytes, upload_weights(w_, rope_, *cuda_));
  log_info("CUDA backend: ", cuda_->device_name(), "; weights ",
           static_cast<double>(bytes) / (1 << 30), " GiB in device memory");
  return Status::ok();
#else
  (void)opts, (void)convert, (void)lm_head_convert;
  return Status::error(
      "--device cuda: this dsserve was built without the CUDA backend (build it with make cuda)");
#endif
}

bool Model::cuda_available() {
#if DSS_CUDA
  return CudaBackend::device_count() > 0;
#else
  return false;
#endif
}

int64_t Model::device_free_bytes() const {
#if DSS_CUDA
  if (cuda_ != nullptr) {
    size_t free_b = 0, total_b = 0;
    cuda_->memory_info(&free_b, &total_b);
    return static_cast<int64_t>(free_b);
  }
#endif
  return 0;
}

std::string Model::device_name() const {
#if DSS_CUDA
  if (cuda_ != nullptr) return cuda_->device_name();
#endif
  return "cpu";
}

KvLayout Model::kv_layout(int32_t page_size, DType dtype) const {
  return KvLayout{cfg_.n_layers + (has_mtp() ? 1 : 0),
                  cfg_.kv_lora_rank,
                  cfg_.d_rope,
                  page_size,
                  cfg_.arch == ModelArch::kDeepseekV32 ? cfg_.index_head_dim : 0,
                  dtype};
}

DType Model::default_kv_dtype() const {
  return cfg_.arch == ModelArch::kDeepseekV32 ? DType::kF8E4M3 : DType::kBF16;
}

Workspace Model::workspace(const WorkspaceLimits& limits_in) const {
  WorkspaceLimits limits = limits_in;
  limits.tp_size = shard_.dense().size;
  limits.ep_ranks = shard_.dp_attention ? shard_.size : 0;
#if DSS_CUDA
  if (cuda_ != nullptr) {
    limits.device_logits = true;
    return Workspace(
        cfg_, limits,
        cuda_->allocate(Workspace::activation_bytes(cfg_, limits), MemoryUse::kActivations),
        cuda_->make_scratch(cfg_, limits));
  }
#endif
  return Workspace(
      cfg_, limits,
      be_->allocate(Workspace::activation_bytes(cfg_, limits), MemoryUse::kActivations),
      be_->make_scratch(cfg_, limits));
}

KvCache Model::make_kv_cache(const KvLayout& layout, int32_t n_pages) const {
  const size_t bytes = KvCache::storage_bytes(layout, n_pages);
#if DSS_CUDA
  if (cuda_ != nullptr)
    return KvCache(layout, n_pages, cuda_->allocate(bytes, MemoryUse::kKvCache));
#endif
  return KvCache(layout, n_pages, be_->allocate(bytes, MemoryUse::kKvCache));
}

void Model::idle_forward(Workspace& ws) const {
  DSS_CHECK(shard_.dp_attention && tp_group_ != nullptr, "idle_forward outside DP attention");
  const PhaseVariantScope phase_variant_scope;
  DSS_PHASE_SCOPE(kForward);
  for (int32_t i = 0; i < cfg_.n_layers; ++i) {
    const LayerWeights& L = w_.layers[static_cast<size_t>(i)];
    if (L.is_moe) moe_dispatch_forward(*be_, *tp_group_, cfg_, L.moe, i, 0, ws);
  }
}

void Model::forward(const ForwardBatch& b, KvCache& kv, Workspace& ws, float* logits,
                    AttnPath path) const {
#if DSS_CUDA
  if (cuda_ != nullptr) {
    LocalComm alone;
    forward_on(*cuda_, alone, b, kv, ws, logits, path);
    return;
  }
#endif
  if (tp_group_ != nullptr) {
    forward_on(*be_, *tp_group_, b, kv, ws, logits, path);
  } else {
    LocalComm alone;
    forward_on(*be_, alone, b, kv, ws, logits, path);
  }
}

// logits [n_rows, n_vocab] from every rank's [n_rows, n_vocab / size] slice: one allgather into
// [size, n_rows, n_vocab / size], then each rank's columns to their place.
template <Communicator C>
void Model::gather_logits(C& comm, int32_t n_rows, const Workspace& ws, float* logits) const {
  const int64_t V = cfg_.n_vocab, Vs = V / shard_.size;  // never under DP attention
  const auto n = static_cast<size_t>(n_rows * Vs);
  const std::span<const float> shard(ws.logit_shard.data(), n);
  const std::span<float> all = ws.logit_gather.first(n * static_cast<size_t>(shard_.size));
  if (ws.logits_to_rank0_only) {
    comm.gather(shard, all, 0);
    if (comm.rank() != 0) return;
  } else {
    comm.allgather(shard, all);
  }
  for (int32_t r = 0; r < shard_.size; ++r) {
    for (int32_t j = 0; j < n_rows; ++j) {
      const float* src =
          ws.logit_gather.data() + static_cast<size_t>(r) * n + static_cast<size_t>(j * Vs);
      std::copy(src, src + Vs, logits + j * V + r * Vs);
    }
  }
}

template <ModelBackend B, Communicator C, typename SumRows>
void Model::layer_forward(const B& be, C& comm, const LayerWeights& L, int32_t i_kv,
                          const ForwardBatch& b, KvCache& kv, Workspace& ws, AttnPath path,
                          SumRows&& sum_rows) const {
  const ModelConfig& c = cfg_;
  const int32_t T = b.n_tokens();
  const int64_t d = c.d_model;
  be.rmsnorm_rows(ws.h.data(), L.attn_norm, T, d, c.rms_eps, ws.xn.data());
  {
    DSS_PHASE_SCOPE(kMla);
    mla_forward(be, c, rope_, L.mla, i_kv, b, kv, ws, path);  // xn -> tmp
  }
  sum_rows(ws.tmp);
  be.add_rows(ws.tmp.data(), T * d, ws.h.data());
  be.rmsnorm_rows(ws.h.data(), L.ffn_norm, T, d, c.rms_eps, ws.xn.data());
  if (L.is_moe && shard_.dp_attention) {
    DSS_PHASE_SCOPE(kMoe);
    moe_dispatch_forward(be, comm, c, L.moe, i_kv, T, ws);  // xn -> tmp, tokens exchanged
  } else if (L.is_moe) {
    DSS_PHASE_SCOPE(kMoe);
    moe_forward(be, c, L.moe, i_kv, T, ws);  // xn -> tmp
  } else {
    DSS_PHASE_SCOPE(kDenseFfn);
    mlp_forward(be, L.dense, T, ws);  // xn -> tmp
  }
  sum_rows(ws.tmp);
  be.add_rows(ws.tmp.data(), T * d, ws.h.data());
}

void Model::mtp_forward(const ForwardBatch& b, std::span<const float> prev_hidden, KvCache& kv,
                        Workspace& ws, float* logits, std::span<float> block_out) const {
  const ModelConfig& c = cfg_;
  const int32_t T = b.n_tokens();
  const int64_t d = c.d_model;
  DSS_CHECK(has_mtp() && !shard_.sharded(), "mtp_forward without the MTP module");
  DSS_CHECK(!ws.mtp_in.empty(), "mtp_forward needs WorkspaceLimits::mtp");
  DSS_CHECK(T <= ws.limits.max_tokens && prev_hidden.size() >= static_cast<size_t>(T * d));
  DSS_CHECK(static_cast<int32_t>(b.logit_rows.size()) <= ws.limits.max_logit_rows);
  DSS_CHECK(block_out.empty() || block_out.size() >= static_cast<size_t>(T * d));
  const CpuBackend& be = *be_;
  const MtpWeights& m = w_.mtp[0];
  for (const TokenId id : b.tokens)
    DSS_CHECK(id >= 0 && id < c.n_vocab, "token id ", id, " out of range");
  be.begin_forward(b, *ws.backend);
  ForwardTrace* const trace = ws.trace;  // routing traces cover the main layers only
  ws.trace = nullptr;
  be.embed(m.embed, b.tokens.data(), T, ws.h.data(), 0);
  for (int32_t t = 0; t < T; ++t) {  // [enorm(embedding) | hnorm(hidden)]
    float* row = ws.mtp_in.data() + t * 2 * d;
    be.rmsnorm_rows(ws.h.data() + t * d, m.enorm, 1, d, c.rms_eps, row);
    be.rmsnorm_rows(prev_hidden.data() + t * d, m.hnorm, 1, d, c.rms_eps, row + d);
  }
  be.linear(m.eh_proj, ws.mtp_in.data(), T, ws.h.data(), *ws.backend);
  LocalComm alone;
  layer_forward(be, alone, m.block, c.n_layers, b, kv, ws, AttnPath::kAuto,
                [](std::span<float>) {});
  ws.trace = trace;
  if (!block_out.empty()) std::copy_n(ws.h.data(), T * d, block_out.data());
  const auto n_out = static_cast<int32_t>(b.logit_rows.size());
  for (int32_t j = 0; j < n_out; ++j) {
    const int32_t t = b.logit_rows[static_cast<size_t>(j)];
    DSS_CHECK(t >= 0 && t < T, "logit row ", t, " out of range");
    be.rmsnorm_rows(ws.h.data() + t * d, m.head_norm, 1, d, c.rms_eps, ws.logit_in.data() + j * d);
  }
  if (n_out > 0) be.linear(m.head, ws.logit_in.data(), n_out, logits, *ws.backend);
}

template <ModelBackend B, Communicator C>
void Model::forward_on(const B& be, C& comm, const ForwardBatch& b, KvCache& kv, Workspace& ws,
                       float* logits, AttnPath path) const {
  const ModelConfig& c = cfg_;
  const int32_t T = b.n_tokens();
  const int64_t d = c.d_model;
  DSS_CHECK(T <= ws.limits.max_tokens, "tokens ", T, " > workspace ", ws.limits.max_tokens);
  DSS_CHECK(static_cast<int32_t>(b.logit_rows.size()) <= ws.limits.max_logit_rows);
  DSS_CHECK(static_cast<int32_t>(b.seq_token_begin.size()) == b.n_seqs() + 1);
  DSS_CHECK(ws.limits.n_threads >= be.n_threads(), "workspace built for ", ws.limits.n_threads,
            " threads");
  DSS_CHECK(!act_quant_fp8_ || ws.limits.act_quant, "W8A8 model needs WorkspaceLimits::act_quant");
  if constexpr (B::kDeviceMemory) {
    DSS_CHECK(ws.trace == nullptr, "forward traces read host memory: the CPU backend only");
    DSS_CHECK(!ws.logits_dev.empty(), "a device forward needs WorkspaceLimits::device_logits");
  }
  const PhaseVariantScope phase_variant_scope;  // after the kForward scope closes: next variant
  DSS_PHASE_SCOPE(kForward);
  be.begin_forward(b, *ws.backend);
  // A tensor-parallel rank's embedding, attention and FFN give partial sums (shard.h): summed
  // over the group here, the one place that composes the blocks.
  const bool tp = shard_.dense().sharded();
  auto sum_rows = [&](std::span<float> x) {
    if (tp) {
      DSS_PHASE_SCOPE(kCollective);
      const int64_t t0 = steady_ns();
      comm.allreduce_sum(x.first(static_cast<size_t>(T * d)));
      ws.collective_ns += steady_ns() - t0;
      ws.collective_bytes += T * d * static_cast<int64_t>(sizeof(float));
    }
  };
  embed_forward(be, c, w_, b, ws);
  sum_rows(ws.h);
  if (ws.trace != nullptr) {
    ws.trace->experts.assign(static_cast<size_t>(c.n_layers), {});
    ws.trace->index_sel.assign(static_cast<size_t>(c.n_layers), {});
  }
  for (int32_t i = 0; i < c.n_layers; ++i)
    layer_forward(be, comm, w_.layers[static_cast<size_t>(i)], i, b, kv, ws, path, sum_rows);
  if (!ws.hidden.empty()) {  // the MTP module's input (mtp_forward)
    DSS_CHECK(ws.hidden.size() >= static_cast<size_t>(T * d));
    be.rmsnorm_rows(ws.h.data(), w_.final_norm, T, d, c.rms_eps, ws.hidden.data());
  }
  if (!tp) {
    if constexpr (B::kDeviceMemory) {
      head_forward(be, c, w_, b, ws, ws.logits_dev.data());
      be.download(ws.logits_dev.data(), logits,
                  static_cast<int64_t>(b.logit_rows.size()) * c.n_vocab);
    } else {
      head_forward(be, c, w_, b, ws, logits);
    }
    return;
  }
  head_forward(be, c, w_, b, ws, ws.logit_shard.data());
  DSS_PHASE_SCOPE(kCollective);
  const int64_t t0 = steady_ns();
  gather_logits(comm, static_cast<int32_t>(b.logit_rows.size()), ws, logits);
  ws.collective_ns += steady_ns() - t0;
  ws.collective_bytes += static_cast<int64_t>(b.logit_rows.size()) * (c.n_vocab / shard_.size) *
                         static_cast<int64_t>(sizeof(float));
}

}  // namespace dss
