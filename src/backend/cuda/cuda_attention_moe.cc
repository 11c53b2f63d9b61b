// CudaBackend's MLA attention, V3.2 indexer selection and MoE (backend/backend.h contracts).
#include <cuda_runtime.h>

#include <algorithm>

#include "backend/cpu/moe_router.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_scratch.h"
#include "backend/cuda/dev_views.h"
#include "kernels/cuda/ops_device.h"

namespace dss {

namespace dev = cuda::dev;

static_assert(kCudaDecodeParts <= dev::kMaxParts);

namespace {

// The k highest scores[0, n) (ties: the lower index), in increasing index order, into out.
void top_k_host(const float* scores, int32_t n, int32_t k, int32_t* out,
                std::vector<int32_t>& order) {
  for (int32_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  auto better = [scores](int32_t x, int32_t y) {
    return scores[x] > scores[y] || (scores[x] == scores[y] && x < y);
  };
  std::nth_element(order.begin(), order.begin() + k, order.begin() + n, better);
  std::sort(order.begin(), order.begin() + k);
  std::copy(order.begin(), order.begin() + k, out);
}

dev::MlaAttendDev attend_args(const MlaAttnArgs& a, const CudaScratch& s, const int32_t* positions,
                              const int32_t* page_table) {
  dev::MlaAttendDev d;
  d.n_heads = a.shape.n_heads;
  d.d_nope = a.shape.d_nope;
  d.d_rope = a.shape.d_rope;
  d.d_v = a.shape.d_v;
  d.kv_lora_rank = a.shape.kv_lora_rank;
  d.softmax_scale = a.shape.softmax_scale;
  d.w_uk_t = dev_matrix(*a.w_uk_t);
  d.kv_b = dev_matrix(*a.kv_b);
  d.kv = dev_kv(*a.kv, a.i_layer);
  d.batch = {positions, page_table, a.batch->max_pages};
  if (a.attended.topk > 0 && a.attended.sel != nullptr) {
    d.sel = a.attended.sel;
    d.n_sel = a.attended.n_sel;
    d.topk = a.attended.topk;
  }
  d.q = a.q;
  d.q_lat = s.q_lat;
  d.o_lat = s.o_lat;
  d.part_o = s.part_o;
  d.part_ml = s.part_ml;
  d.attn = a.attn;
  return d;
}

}  // namespace

void CudaBackend::mla_prefill(const MlaAttnArgs& a, int32_t i_seq, BackendScratch& scratch) const {
  CudaScratch& s = cuda_scratch(scratch);
  const ForwardBatch& b = *a.batch;
  dev::MlaAttendDev d = attend_args(a, s, dev(b.positions.data()), dev(b.page_table.data()));
  const int32_t t_begin = b.seq_token_begin[static_cast<size_t>(i_seq)];
  const int32_t t_end = b.seq_token_begin[static_cast<size_t>(i_seq) + 1];
  d.seq_fixed = i_seq;
  for (int32_t t0 = t_begin; t0 < t_end; t0 += s.attn_chunk) {
    d.tok_begin = t0;
    d.n_range = std::min(s.attn_chunk, t_end - t0);
    DSS_DEV(dev::mla_attend(d, stream_));
  }
}

void CudaBackend::mla_decode(const MlaAttnArgs& a, const int32_t* toks, const int32_t* seqs,
                             int32_t n, BackendScratch& scratch) const {
  CudaScratch& s = cuda_scratch(scratch);
  const ForwardBatch& b = *a.batch;
  DSS_CHECK(n <= dev::kMaxListed, "mla_decode of ", n, " tokens");
  dev::MlaAttendDev d = attend_args(a, s, dev(b.positions.data()), dev(b.page_table.data()));
  d.n_listed = n;
  d.n_parts = kCudaDecodeParts;
  std::copy(toks, toks + n, d.tok);
  std::copy(seqs, seqs + n, d.seq);
  DSS_DEV(dev::mla_attend(d, stream_));
}

void CudaBackend::indexer_select(const IndexerSelectArgs& a, BackendScratch& scratch) const {
  CudaScratch& s = cuda_scratch(scratch);
  const ForwardBatch& b = *a.batch;
  const auto st = static_cast<cudaStream_t>(stream_);
  const int32_t K = a.topk;
  const int32_t t_begin = b.seq_token_begin[static_cast<size_t>(a.i_seq)];
  const int32_t t_end = b.seq_token_begin[static_cast<size_t>(a.i_seq) + 1];
  if (t_end == t_begin) return;
  const int64_t ld = s.limits.max_kv_len;
  dev::IndexerScoreDev d;
  d.n_heads = a.n_heads;
  d.head_dim = a.head_dim;
  d.seq = a.i_seq;
  d.kv = dev_kv(*a.kv, a.i_layer);
  d.batch = {dev(b.positions.data()), dev(b.page_table.data()), b.max_pages};
  d.q = a.q;
  d.coef = a.coef;
  d.scores = s.idx_scores;
  d.ld = ld;
  for (int32_t t0 = t_begin; t0 < t_end; t0 += s.index_chunk) {
    const int32_t n = std::min(s.index_chunk, t_end - t0);
    int32_t max_pos = 0;  // scored positions: only tokens past the dense range need them
    for (int32_t t = t0; t < t0 + n; ++t) {
      const int32_t pos = b.positions[static_cast<size_t>(t)];
      DSS_CHECK(pos < ld, "position ", pos, " >= workspace max_kv_len ", ld);
      if (pos + 1 > K) max_pos = std::max(max_pos, pos + 1);
    }
    if (max_pos > 0) {
      d.t_begin = t0;
      d.n_tok = n;
      d.max_pos = max_pos;
      DSS_DEV(dev::indexer_scores(d, stream_));
      const size_t pitch = static_cast<size_t>(ld) * sizeof(float);
      cuda_check(cudaMemcpy2DAsync(s.h_idx_scores, pitch, s.idx_scores, pitch,
                                   static_cast<size_t>(max_pos) * sizeof(float),
                                   static_cast<size_t>(n), cudaMemcpyDeviceToHost, st),
                 "indexer scores");
      cuda_check(cudaStreamSynchronize(st), "indexer scores");
    }
    for (int32_t t = t0; t < t0 + n; ++t) {
      const int32_t pos = b.positions[static_cast<size_t>(t)];
      s.h_n_sel[t - t_begin] = pos + 1 <= K ? -1 : K;
      if (pos + 1 <= K) continue;
      top_k_host(s.h_idx_scores + static_cast<size_t>(t - t0) * static_cast<size_t>(ld), pos + 1, K,
                 s.h_sel + static_cast<size_t>(t - t_begin) * static_cast<size_t>(K), s.order);
    }
  }
  const auto n_all = static_cast<size_t>(t_end - t_begin);
  cuda_check(
      cudaMemcpyAsync(a.sel + static_cast<size_t>(t_begin) * static_cast<size_t>(K), s.h_sel,
                      n_all * static_cast<size_t>(K) * sizeof(int32_t), cudaMemcpyHostToDevice, st),
      "indexer selection");
  cuda_check(cudaMemcpyAsync(a.n_sel + t_begin, s.h_n_sel, n_all * sizeof(int32_t),
                             cudaMemcpyHostToDevice, st),
             "indexer selection");
  cuda_check(cudaStreamSynchronize(st), "indexer selection");  // h_sel is reused next call
}

void CudaBackend::moe(const MoeArgs& a, BackendScratch& scratch) const {
  CudaScratch& s = cuda_scratch(scratch);
  const ModelConfig& c = *a.cfg;
  const auto st = static_cast<cudaStream_t>(stream_);
  DSS_CHECK(a.sel_weights_in == nullptr && a.sel_weights_out == nullptr,
            "DP attention's token exchange is not implemented on the CUDA backend");
  const int32_t T = a.n_tok, K = c.n_experts_per_tok, E = c.n_experts;
  const int64_t d = c.d_model;
  if (T == 0) return;
  DSS_CHECK(T <= s.limits.max_tokens, "moe of ", T, " tokens");
  // Router logits on the device; the selection on the host (route_token, as the CPU backend).
  linear(*a.router, a.x, T, s.router, scratch);
  cuda_check(cudaMemcpyAsync(s.h_router, s.router, static_cast<size_t>(T) * E * sizeof(float),
                             cudaMemcpyDeviceToHost, st),
             "router logits");
  cuda_check(cudaStreamSynchronize(st), "router logits");
  const int32_t e_begin = a.expert_begin, e_end = std::min(a.expert_end, E);
  std::fill(s.expert_count.begin(), s.expert_count.end(), 0);
  for (int32_t t = 0; t < T; ++t) {
    int32_t* experts = s.h_sel_experts + static_cast<size_t>(t) * K;
    route_token(c, s.h_router + static_cast<size_t>(t) * E, a.router_bias, s.route_scratch.data(),
                experts, s.sel_weights.data() + static_cast<size_t>(t) * K);
    for (int32_t k = 0; k < K; ++k)
      if (experts[k] >= e_begin && experts[k] < e_end)
        ++s.expert_count[static_cast<size_t>(experts[k])];
  }
  // Buckets in expert order, tokens ascending within one: (token, weight) pairs.
  std::vector<int32_t>& offset = s.order;  // [E + 1]
  int32_t n_rows = 0, n_used = 0;
  for (int32_t e = 0; e < E; ++e) {
    offset[static_cast<size_t>(e)] = n_rows;
    n_rows += s.expert_count[static_cast<size_t>(e)];
    n_used += s.expert_count[static_cast<size_t>(e)] > 0 ? 1 : 0;
  }
  for (int32_t e = 0; e < E; ++e) s.expert_count[static_cast<size_t>(e)] = 0;
  for (int32_t t = 0; t < T; ++t) {
    for (int32_t k = 0; k < K; ++k) {
      const int32_t e = s.h_sel_experts[static_cast<size_t>(t) * K + k];
      if (e < e_begin || e >= e_end) continue;
      const int32_t at = offset[static_cast<size_t>(e)] + s.expert_count[static_cast<size_t>(e)]++;
      s.h_moe_rows[at] = t;
      s.h_moe_weights[at] = s.sel_weights[static_cast<size_t>(t) * K + k];
    }
  }
  if (a.routed_expert_reads != nullptr) *a.routed_expert_reads += n_used;
  cuda_check(
      cudaMemcpyAsync(a.sel_experts, s.h_sel_experts, static_cast<size_t>(T) * K * sizeof(int32_t),
                      cudaMemcpyHostToDevice, st),
      "selected experts");
  cuda_check(
      cudaMemcpyAsync(s.moe_rows, s.h_moe_rows, static_cast<size_t>(n_rows) * sizeof(int32_t),
                      cudaMemcpyHostToDevice, st),
      "expert buckets");
  cuda_check(
      cudaMemcpyAsync(s.moe_weights, s.h_moe_weights, static_cast<size_t>(n_rows) * sizeof(float),
                      cudaMemcpyHostToDevice, st),
      "expert weights");
  if (a.shared != nullptr) {
    ffn(*a.shared, a.x, T, a.out, scratch);
  } else {
    cuda_check(cudaMemsetAsync(a.out, 0, static_cast<size_t>(T * d) * sizeof(float), st),
               "moe out");
  }
  for (int32_t e = e_begin; e < e_end; ++e) {
    const int32_t n_e = s.expert_count[static_cast<size_t>(e)];
    if (n_e == 0) continue;
    const int32_t off = offset[static_cast<size_t>(e)];
    DSS_DEV(dev::gather_rows(a.x, s.moe_rows + off, n_e, d, s.xe, stream_));
    ffn(a.experts[e], s.xe, n_e, s.ye, scratch);
    DSS_DEV(
        dev::scatter_add_rows(s.ye, s.moe_rows + off, s.moe_weights + off, n_e, d, a.out, stream_));
  }
  cuda_check(cudaStreamSynchronize(st), "moe");  // the pinned buckets are rewritten next layer
}

}  // namespace dss
