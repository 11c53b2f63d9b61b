#include "model/deepseek/mla.h"

#include <algorithm>

#include "backend/cpu/cpu_backend.h"
#include "base/check.h"
#include "base/phase_timer.h"
#include "model/deepseek/indexer.h"
#if DSS_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace dss {

namespace {

// Attention reads every row, the step's own included, from the cache (what decode will see).
// Naive sequences one at a time; absorbed tokens in chunks across sequences, so a decode step's
// W_UK / W_UV products are one matmul per head and chunk (results as for one token: matmul
// results do not depend on the batch). A sequence's V3.2 selection is made before its tokens
// are queued; it is kept per token (ws.sel), so later sequences' selections leave it intact.
template <ModelBackend B>
void attend(const B& be, const ModelConfig& c, const MlaWeights& w, int32_t i_layer,
            const ForwardBatch& b, const KvCache& kv, Workspace& ws, AttnPath path) {
  MlaAttnArgs a;
  a.shape = {w.n_heads, c.d_nope, c.d_rope, c.d_v, c.kv_lora_rank, c.softmax_scale()};
  a.kv_b = &w.kv_b;
  a.w_uk_t = &w.w_uk_t;
  a.kv = &kv;
  a.i_layer = i_layer;
  a.batch = &b;
  a.q = ws.q.data();
  a.attended = {ws.sel.data(), ws.n_sel.data(), c.index_topk};
  a.attn = ws.attn.data();
  int32_t abs_toks[kMlaAbsorbChunk], abs_seqs[kMlaAbsorbChunk], n_abs = 0;
  for (int32_t s = 0; s < b.n_seqs(); ++s) {
    const int32_t t_begin = b.seq_token_begin[static_cast<size_t>(s)];
    const int32_t t_end = b.seq_token_begin[static_cast<size_t>(s) + 1];
    const int32_t L = b.seq_kv_len[static_cast<size_t>(s)];
    if (t_end == t_begin) continue;
    DSS_CHECK(L <= ws.limits.max_kv_len, "kv_len ", L, " > workspace ", ws.limits.max_kv_len);
    if (w.has_indexer) indexer_select(be, c, i_layer, b, s, kv, ws);
    const bool verify = !b.seq_n_draft.empty() && b.seq_n_draft[static_cast<size_t>(s)] > 0;
    const bool naive =
        path == AttnPath::kNaive || (path == AttnPath::kAuto && t_end - t_begin > 1 && !verify);
    if (naive) {
      be.mla_prefill(a, s, *ws.backend);
      continue;
    }
    for (int32_t t = t_begin; t < t_end; ++t) {
      abs_toks[n_abs] = t;
      abs_seqs[n_abs] = s;
      if (++n_abs == kMlaAbsorbChunk) {
        be.mla_decode(a, abs_toks, abs_seqs, n_abs, *ws.backend);
        n_abs = 0;
      }
    }
  }
  if (n_abs > 0) be.mla_decode(a, abs_toks, abs_seqs, n_abs, *ws.backend);
}

}  // namespace

template <ModelBackend B>
void mla_forward(const B& be, const ModelConfig& c, const RopeTable& rope, const MlaWeights& w,
                 int32_t i_layer, const ForwardBatch& b, KvCache& kv, Workspace& ws,
                 AttnPath path) {
  const int32_t T = b.n_tokens(), d_row = kv.layout().d_row();
  BackendScratch& s = *ws.backend;
  DSS_PHASES(phase, kMlaProjIn);
  // q_a and kv_a read the same xn: one dispatch where the backend can.
  be.linear_pair(w.q_a, ws.q_a.data(), w.kv_a, ws.kv_a.data(), ws.xn.data(), T, s);
  be.rmsnorm_rows(ws.q_a.data(), w.q_a_norm, T, c.q_lora_rank, c.rms_eps, ws.q_a.data());
  DSS_PHASE_NEXT(phase, kMlaQb);
  be.linear(w.q_b, ws.q_a.data(), T, ws.q.data(), s);
  DSS_PHASE_NEXT(phase, kMlaRopeCache);
  MlaRopeArgs r;
  r.shape = {w.n_heads, c.d_nope, c.d_rope, c.d_v, c.kv_lora_rank, c.softmax_scale()};
  r.n_tok = T;
  r.positions = b.positions.data();
  r.rope_freqs = rope.freqs().data();
  r.kv_a = ws.kv_a.data();
  r.kv_a_norm = &w.kv_a_norm;
  r.eps = c.rms_eps;
  r.fp8_latent = w.has_indexer;  // V3.2 simulates an FP8 latent cache
  r.q = ws.q.data();
  r.rows = ws.kv_new.data();
  r.d_row = d_row;
  be.mla_rope_rows(r, s);
  if (w.has_indexer) indexer_keys(be, c, rope, w.indexer, b, d_row, ws);  // rows' index part
  be.kv_store_rows(kv, i_layer, b.kv_write_slots.data(), ws.kv_new.data(), T);
  DSS_PHASE_NEXT(phase, kMlaAttention);
  attend(be, c, w, i_layer, b, kv, ws, path);
  DSS_PHASE_NEXT(phase, kMlaOut);
  be.linear(w.o, ws.attn.data(), T, ws.tmp.data(), s);
}

template void mla_forward<CpuBackend>(const CpuBackend&, const ModelConfig&, const RopeTable&,
                                      const MlaWeights&, int32_t, const ForwardBatch&, KvCache&,
                                      Workspace&, AttnPath);
#if DSS_CUDA
template void mla_forward<CudaBackend>(const CudaBackend&, const ModelConfig&, const RopeTable&,
                                       const MlaWeights&, int32_t, const ForwardBatch&, KvCache&,
                                       Workspace&, AttnPath);
#endif

}  // namespace dss
