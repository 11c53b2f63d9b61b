#include "model/deepseek/workspace.h"

#include "base/check.h"

namespace dss {

Workspace::Workspace(const ModelConfig& c, const WorkspaceLimits& lim,
                     std::unique_ptr<BackendScratch> backend_scratch)
    : limits(lim), backend(std::move(backend_scratch)) {
  DSS_CHECK(backend != nullptr, "Workspace without backend scratch");
  const auto T = static_cast<size_t>(lim.max_tokens);
  const auto d = static_cast<size_t>(c.d_model);
  h.resize(T * d);
  xn.resize(T * d);
  tmp.resize(T * d);
  q_a.resize(T * static_cast<size_t>(c.q_lora_rank));
  q.resize(T * static_cast<size_t>(c.n_heads * c.d_qk()));
  kv_a.resize(T * static_cast<size_t>(c.kv_lora_rank + c.d_rope));
  attn.resize(T * static_cast<size_t>(c.n_heads * c.d_v));
  rope_cos.resize(static_cast<size_t>(c.d_rope / 2));
  rope_sin.resize(static_cast<size_t>(c.d_rope / 2));
  const size_t d_row = static_cast<size_t>(c.kv_lora_rank + c.d_rope) +
                       (c.index_head_dim > 0 ? static_cast<size_t>(c.index_head_dim) + 1 : 0);
  kv_new.resize(T * d_row);
  sel_experts.resize(T * static_cast<size_t>(c.n_experts_per_tok));
  logit_in.resize(static_cast<size_t>(lim.max_logit_rows) * d);
  if (c.index_n_heads > 0) {
    idx_q.resize(T * static_cast<size_t>(c.index_n_heads * c.index_head_dim));
    idx_k.resize(T * static_cast<size_t>(c.index_head_dim));
    idx_w.resize(T * static_cast<size_t>(c.index_n_heads));
    sel.resize(T * static_cast<size_t>(c.index_topk));
  }
  n_sel.assign(T, -1);
}

}  // namespace dss
