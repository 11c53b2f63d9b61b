#include "model/runtime/model.h"

#include <algorithm>
#include <thread>

#include "base/check.h"
#include "base/phase_timer.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_parallel.h"
#include "kernels/cpu/vec_ops.h"

namespace dss {

namespace {
// [W8A8_SCRATCH] The Workspace::act_q buffer of the forward pass running on this thread.
// NOTE: Model::mm runs only on the thread that called forward(), so this lets mm reach the
// caller's workspace without threading it through every call site; set and reset by forward().
thread_local std::vector<float>* t_act_q = nullptr;
struct ActQuantScope {
  explicit ActQuantScope(std::vector<float>* buf) { t_act_q = buf; }
  ~ActQuantScope() { t_act_q = nullptr; }
  ActQuantScope(const ActQuantScope&) = delete;
  ActQuantScope& operator=(const ActQuantScope&) = delete;
};

}  // namespace

Result<std::unique_ptr<Model>> Model::load(const LoadOptions& opts) {
  DSS_ASSIGN_OR_RETURN(ModelConfig cfg, ModelConfig::load(opts.dir));
  DSS_ASSIGN_OR_RETURN(Checkpoint ck, Checkpoint::open(opts.dir));
  std::unique_ptr<Model> m(new Model(std::move(cfg), std::move(ck)));
  if (opts.act_quant != "none" && opts.act_quant != "fp8")
    return Status::error("--act-quant: '", opts.act_quant, "' is not none | fp8");
  m->act_quant_fp8_ = opts.act_quant == "fp8";
  if (opts.weight_layout != "tiled" && opts.weight_layout != "mmap")
    return Status::error("--weight-layout: '", opts.weight_layout, "' is not tiled | mmap");
  const bool tile = opts.weight_layout == "tiled";
  if (opts.matmul_dtype != "f32" && opts.matmul_dtype != "bf16" && opts.matmul_dtype != "auto")
    return Status::error("--matmul-dtype: '", opts.matmul_dtype, "' is not f32 | bf16 | auto");
  if (opts.matmul_dtype == "bf16") {
    if (!cpu::cpu_has_bf16_dot())
      return Status::error("--matmul-dtype bf16: this CPU has no AVX512-BF16 (vdpbf16ps); use f32");
    if (!tile) return Status::error("--matmul-dtype bf16 needs --weight-layout tiled");
    if (m->act_quant_fp8_) return Status::error("--matmul-dtype bf16 excludes --act-quant fp8");
  }
  m->matmul_bf16_ = opts.matmul_dtype == "bf16" || (opts.matmul_dtype == "auto" && tile &&
                                                    !m->act_quant_fp8_ && cpu::cpu_has_bf16_dot());
  const bool ue8m0 = m->cfg_.quant.ue8m0 || m->cfg_.arch == ModelArch::kDeepseekV32;
  QuantPolicy policy, lm_head_policy;
  if (!opts.weight_dtype.empty()) {
    DSS_ASSIGN_OR_RETURN(policy.to, parse_weight_dtype(opts.weight_dtype, "--weight-dtype"));
    policy.ue8m0 = ue8m0;
  }
  if (!opts.lm_head_dtype.empty()) {
    DSS_ASSIGN_OR_RETURN(lm_head_policy.to,
                         parse_weight_dtype(opts.lm_head_dtype, "--lm-head-dtype"));
    lm_head_policy.ue8m0 = ue8m0;
    lm_head_policy.exclude.clear();
  }
  DSS_ASSIGN_OR_RETURN(
      m->w_, load_weights(m->ck_, m->cfg_, opts.weight_dtype.empty() ? nullptr : &policy, tile,
                          opts.lm_head_dtype.empty() ? nullptr : &lm_head_policy, m->matmul_bf16_));
  const int32_t n_threads =
      opts.n_threads > 0 ? opts.n_threads
                         : static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  m->pool_ = std::make_unique<ThreadPool>(n_threads);
  return m;
}

KvLayout Model::kv_layout(int32_t page_size, DType dtype) const {
  return KvLayout{cfg_.n_layers,
                  cfg_.kv_lora_rank,
                  cfg_.d_rope,
                  page_size,
                  cfg_.arch == ModelArch::kDeepseekV32 ? cfg_.index_head_dim : 0,
                  dtype};
}

DType Model::default_kv_dtype() const {
  return cfg_.arch == ModelArch::kDeepseekV32 ? DType::kF8E4M3 : DType::kBF16;
}

void Model::forward(const ForwardBatch& b, KvCache& kv, Workspace& ws, float* logits,
                    AttnPath path) const {
  const ModelConfig& c = cfg_;
  const int32_t T = b.n_tokens();
  const int64_t d = c.d_model;
  DSS_CHECK(T <= ws.limits.max_tokens, "tokens ", T, " > workspace ", ws.limits.max_tokens);
  DSS_CHECK(static_cast<int32_t>(b.logit_rows.size()) <= ws.limits.max_logit_rows);
  DSS_CHECK(static_cast<int32_t>(b.seq_token_begin.size()) == b.n_seqs() + 1);
  DSS_CHECK(ws.limits.n_threads >= pool_->n_threads(), "workspace built for ", ws.limits.n_threads,
            " threads");
  DSS_CHECK(!act_quant_fp8_ || ws.limits.act_quant, "W8A8 model needs WorkspaceLimits::act_quant");
  const ActQuantScope act_quant_scope(&ws.act_q);
  const PhaseVariantScope phase_variant_scope;  // after the kForward scope closes: next variant
  DSS_PHASE_SCOPE(kForward);
  // Embedding lookup (plain, unscaled).
  for (int32_t t = 0; t < T; ++t) {
    const TokenId id = b.tokens[static_cast<size_t>(t)];
    DSS_CHECK(id >= 0 && id < c.n_vocab, "token id ", id, " out of range");
    float* h = ws.h.data() + t * d;
    for (int64_t j = 0; j < d; ++j) h[j] = w_.embed.at(id, j);
  }
  if (ws.trace != nullptr) {
    ws.trace->experts.assign(static_cast<size_t>(c.n_layers), {});
    ws.trace->index_sel.assign(static_cast<size_t>(c.n_layers), {});
  }
  for (int32_t i = 0; i < c.n_layers; ++i) {
    const LayerWeights& L = w_.layers[static_cast<size_t>(i)];
    for (int32_t t = 0; t < T; ++t)
      cpu::rmsnorm(ws.h.data() + t * d, L.attn_norm, d, c.rms_eps, ws.xn.data() + t * d);
    {
      DSS_PHASE_SCOPE(kMla);
      mla(i, b, kv, ws, path);  // xn -> tmp
    }
    for (int32_t t = 0; t < T; ++t) cpu::axpy(1.0f, ws.tmp.data() + t * d, ws.h.data() + t * d, d);
    for (int32_t t = 0; t < T; ++t)
      cpu::rmsnorm(ws.h.data() + t * d, L.ffn_norm, d, c.rms_eps, ws.xn.data() + t * d);
    if (L.is_moe) {
      DSS_PHASE_SCOPE(kMoe);
      moe(i, L.moe, T, ws);  // xn -> tmp
    } else {
      DSS_PHASE_SCOPE(kDenseFfn);
      ffn(L.dense, T, c.d_ff, ws.xn.data(), ws.tmp.data(), ws);
    }
    for (int32_t t = 0; t < T; ++t) cpu::axpy(1.0f, ws.tmp.data() + t * d, ws.h.data() + t * d, d);
  }
  const auto n_out = static_cast<int32_t>(b.logit_rows.size());
  for (int32_t j = 0; j < n_out; ++j) {
    const int32_t t = b.logit_rows[static_cast<size_t>(j)];
    DSS_CHECK(t >= 0 && t < T, "logit row ", t, " out of range");
    cpu::rmsnorm(ws.h.data() + t * d, w_.final_norm, d, c.rms_eps, ws.logit_in.data() + j * d);
  }
  if (n_out > 0) {
    DSS_PHASE_SCOPE(kLmHead);
    mm(w_.lm_head, ws.logit_in.data(), n_out, logits);
  }
}

void Model::mm(const Matrix& w, const float* x, int64_t n_tok, float* y) const {
  if (act_quant_fp8_ && w.dtype == DType::kF8E4M3) {  // W8A8 [W8A8_SCRATCH]
    DSS_CHECK(t_act_q != nullptr && static_cast<size_t>(n_tok * w.n_cols) <= t_act_q->size(),
              "W8A8 scratch too small: ", n_tok, " x ", w.n_cols);
    cpu::act_quant_fp8(x, n_tok, w.n_cols, cfg_.quant.ue8m0, t_act_q->data());
    x = t_act_q->data();
  }
  cpu::matmul_parallel(*pool_, w, x, n_tok, y);
}

void Model::ffn(const FfnWeights& f, int32_t n_tok, int32_t d_ff, const float* x, float* out,
                Workspace& ws) const {
  mm(f.gate, x, n_tok, ws.gate.data());
  mm(f.up, x, n_tok, ws.up.data());
  cpu::silu_mul(ws.gate.data(), ws.up.data(), static_cast<int64_t>(n_tok) * d_ff, ws.gate.data());
  mm(f.down, ws.gate.data(), n_tok, out);
}

}  // namespace dss
