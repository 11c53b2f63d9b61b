#include "model/deepseek/indexer.h"

#include "backend/cpu/cpu_backend.h"
#include "base/check.h"
#if DSS_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace dss {

template <ModelBackend B>
void indexer_keys(const B& be, const ModelConfig& c, const RopeTable& rope, const IndexerWeights& w,
                  const ForwardBatch& b, int32_t d_row, Workspace& ws) {
  const int32_t T = b.n_tokens(), D = c.index_head_dim;
  const int32_t off = c.kv_lora_rank + c.d_rope;
  DSS_CHECK(d_row == off + D + 1, "cache row of ", d_row, " floats has no indexer key");
  BackendScratch& s = *ws.backend;
  be.linear(w.wk, ws.xn.data(), T, ws.idx_k.data(), s);
  be.linear(w.wq_b, ws.q_a.data(), T, ws.idx_q.data(), s);  // q_a holds cq (after q_a_layernorm)
  be.linear(w.weights_proj, ws.xn.data(), T, ws.idx_w.data(), s);
  IndexerRopeArgs r;
  r.n_tok = T;
  r.n_heads = c.index_n_heads;
  r.head_dim = D;
  r.d_rope = c.d_rope;
  r.positions = b.positions.data();
  r.rope_freqs = rope.freqs().data();
  r.k_norm_w = w.k_norm_w.data();
  r.k_norm_b = w.k_norm_b.data();
  r.k = ws.idx_k.data();
  r.q = ws.idx_q.data();
  r.coef = ws.idx_w.data();
  r.rows = ws.kv_new.data();
  r.d_row = d_row;
  r.key_offset = off;
  be.indexer_rope_quant(r, s);
}

template <ModelBackend B>
void indexer_select(const B& be, const ModelConfig& c, int32_t i_layer, const ForwardBatch& b,
                    int32_t i_seq, const KvCache& kv, Workspace& ws) {
  IndexerSelectArgs a;
  a.kv = &kv;
  a.i_layer = i_layer;
  a.batch = &b;
  a.i_seq = i_seq;
  a.q = ws.idx_q.data();
  a.coef = ws.idx_w.data();
  a.n_heads = c.index_n_heads;
  a.head_dim = c.index_head_dim;
  a.topk = c.index_topk;
  a.sel = ws.sel.data();
  a.n_sel = ws.n_sel.data();
  be.indexer_select(a, *ws.backend);
  if (ws.trace == nullptr) return;
  const int32_t K = c.index_topk;
  const int32_t t_begin = b.seq_token_begin[static_cast<size_t>(i_seq)];
  const int32_t t_end = b.seq_token_begin[static_cast<size_t>(i_seq) + 1];
  auto& layer = ws.trace->index_sel[static_cast<size_t>(i_layer)];
  for (int32_t t = t_begin; t < t_end; ++t) {
    const int32_t n = ws.n_sel[static_cast<size_t>(t)];
    const int32_t pos = b.positions[static_cast<size_t>(t)];
    if (n < 0) {
      std::vector<int32_t> all(static_cast<size_t>(pos) + 1);
      for (int32_t p = 0; p <= pos; ++p) all[static_cast<size_t>(p)] = p;
      layer.push_back(std::move(all));
    } else {
      layer.emplace_back(ws.sel.begin() + static_cast<ptrdiff_t>(t) * K,
                         ws.sel.begin() + static_cast<ptrdiff_t>(t) * K + n);
    }
  }
}

template void indexer_keys<CpuBackend>(const CpuBackend&, const ModelConfig&, const RopeTable&,
                                       const IndexerWeights&, const ForwardBatch&, int32_t,
                                       Workspace&);
template void indexer_select<CpuBackend>(const CpuBackend&, const ModelConfig&, int32_t,
                                         const ForwardBatch&, int32_t, const KvCache&, Workspace&);
#if DSS_CUDA
template void indexer_keys<CudaBackend>(const CudaBackend&, const ModelConfig&, const RopeTable&,
                                        const IndexerWeights&, const ForwardBatch&, int32_t,
                                        Workspace&);
template void indexer_select<CudaBackend>(const CudaBackend&, const ModelConfig&, int32_t,
                                          const ForwardBatch&, int32_t, const KvCache&, Workspace&);
#endif

}  // namespace dss
