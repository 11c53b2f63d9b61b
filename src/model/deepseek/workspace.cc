#include "model/deepseek/workspace.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "base/check.h"

namespace dss {

namespace {

// The spans of a Workspace in buffer order, each 64-byte aligned: bind(member, byte offset,
// elements) for each; returns the total bytes.
template <typename Bind>
size_t lay_out(const ModelConfig& c, const WorkspaceLimits& lim, Bind&& bind) {
  const auto T = static_cast<size_t>(lim.max_tokens);
  const auto d = static_cast<size_t>(c.d_model);
  const size_t d_row = static_cast<size_t>(c.kv_lora_rank + c.d_rope) +
                       (c.index_head_dim > 0 ? static_cast<size_t>(c.index_head_dim) + 1 : 0);
  const size_t v32 = c.index_n_heads > 0 ? 1 : 0;
  size_t off = 0;
  auto take = [&](auto member, size_t n) {
    using Elem = typename std::remove_reference_t<decltype(std::declval<Workspace&>().*
                                                           member)>::element_type;
    bind(member, off, n);
    off = (off + n * sizeof(Elem) + 63) / 64 * 64;
  };
  take(&Workspace::h, T * d);
  take(&Workspace::xn, T * d);
  take(&Workspace::tmp, T * d);
  take(&Workspace::q_a, T * static_cast<size_t>(c.q_lora_rank));
  take(&Workspace::q, T * static_cast<size_t>(c.n_heads * c.d_qk()));
  take(&Workspace::kv_a, T * static_cast<size_t>(c.kv_lora_rank + c.d_rope));
  take(&Workspace::attn, T * static_cast<size_t>(c.n_heads * c.d_v));
  take(&Workspace::kv_new, T * d_row);
  take(&Workspace::sel_experts, T * static_cast<size_t>(c.n_experts_per_tok));
  take(&Workspace::logit_in, static_cast<size_t>(lim.max_logit_rows) * d);
  const size_t tp = lim.tp_size > 1 ? static_cast<size_t>(lim.tp_size) : 0;
  const size_t shard_logits =
      tp > 0 ? static_cast<size_t>(lim.max_logit_rows) * static_cast<size_t>(c.n_vocab) / tp : 0;
  take(&Workspace::logit_shard, shard_logits);
  take(&Workspace::logit_gather, shard_logits * tp);
  take(&Workspace::logits_dev,
       lim.device_logits ? static_cast<size_t>(lim.max_logit_rows) * static_cast<size_t>(c.n_vocab)
                         : 0);
  take(&Workspace::idx_q, v32 * T * static_cast<size_t>(c.index_n_heads * c.index_head_dim));
  take(&Workspace::idx_k, v32 * T * static_cast<size_t>(c.index_head_dim));
  take(&Workspace::idx_w, v32 * T * static_cast<size_t>(c.index_n_heads));
  take(&Workspace::sel, v32 * T * static_cast<size_t>(c.index_topk));
  take(&Workspace::n_sel, T);
  const size_t mtp = lim.mtp ? 1 : 0;
  take(&Workspace::hidden, mtp * T * d);
  take(&Workspace::mtp_in, mtp * T * 2 * d);
  const auto S = static_cast<size_t>(std::max(lim.ep_ranks, 0));
  const size_t ep = S > 0 ? 1 : 0, K = static_cast<size_t>(c.n_experts_per_tok);
  take(&Workspace::ep_send, S * T * (d + 2 * K));
  take(&Workspace::ep_recv, S * T * (d + 2 * K));
  take(&Workspace::ep_out, S * T * d);
  take(&Workspace::ep_back, S * T * d);
  take(&Workspace::ep_x, ep * T * d);
  take(&Workspace::ep_y, ep * T * d);
  take(&Workspace::ep_weights, ep * T * K);
  take(&Workspace::ep_ids, ep * T * K);
  take(&Workspace::ep_tokens, S * T);
  take(&Workspace::ep_counts, S * S);
  take(&Workspace::ep_layout, 4 * S);
  return off;
}

}  // namespace

size_t Workspace::activation_bytes(const ModelConfig& cfg, const WorkspaceLimits& limits) {
  return lay_out(cfg, limits, [](auto, size_t, size_t) {});
}

Workspace::Workspace(const ModelConfig& c, const WorkspaceLimits& lim, Buffer activations_buf,
                     std::unique_ptr<BackendScratch> backend_scratch)
    : limits(lim), backend(std::move(backend_scratch)), activations(std::move(activations_buf)) {
  DSS_CHECK(backend != nullptr, "Workspace without backend scratch");
  const size_t need = activation_bytes(c, lim);
  DSS_CHECK(activations.size() >= need, "activation buffer of ", activations.size(), " bytes < ",
            need);
  uint8_t* base = activations.data();
  lay_out(c, lim, [&](auto member, size_t off, size_t n) {
    auto& span = this->*member;
    using Elem = typename std::remove_reference_t<decltype(span)>::element_type;
    span = std::span<Elem>(reinterpret_cast<Elem*>(base + off), n);
  });
  // -1: dense attention until an indexer selects (host memory: the CPU backend's buffers).
  if (activations.space() == MemorySpace::kHost) std::fill(n_sel.begin(), n_sel.end(), -1);
}

}  // namespace dss
