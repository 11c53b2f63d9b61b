#include "model/deepseek/embed_head.h"

#include "backend/cpu/cpu_backend.h"
#include "base/check.h"
#include "base/phase_timer.h"
#if DSS_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace dss {

template <ModelBackend B>
void embed_forward(const B& be, const ModelConfig& c, const ModelWeights& w, const ForwardBatch& b,
                   Workspace& ws) {
  for (const TokenId id : b.tokens)
    DSS_CHECK(id >= 0 && id < c.n_vocab, "token id ", id, " out of range");
  be.embed(w.embed, b.tokens.data(), b.n_tokens(), ws.h.data(), w.vocab_begin);
}

template <ModelBackend B>
void head_forward(const B& be, const ModelConfig& c, const ModelWeights& w, const ForwardBatch& b,
                  Workspace& ws, float* logits) {
  const int32_t T = b.n_tokens();
  const int64_t d = c.d_model;
  const auto n_out = static_cast<int32_t>(b.logit_rows.size());
  for (int32_t j = 0; j < n_out; ++j) {
    const int32_t t = b.logit_rows[static_cast<size_t>(j)];
    DSS_CHECK(t >= 0 && t < T, "logit row ", t, " out of range");
    be.rmsnorm_rows(ws.h.data() + t * d, w.final_norm, 1, d, c.rms_eps, ws.logit_in.data() + j * d);
  }
  if (n_out == 0) return;
  DSS_PHASE_SCOPE(kLmHead);
  be.linear(w.lm_head, ws.logit_in.data(), n_out, logits, *ws.backend);
}

template void embed_forward<CpuBackend>(const CpuBackend&, const ModelConfig&, const ModelWeights&,
                                        const ForwardBatch&, Workspace&);
template void head_forward<CpuBackend>(const CpuBackend&, const ModelConfig&, const ModelWeights&,
                                       const ForwardBatch&, Workspace&, float*);
#if DSS_CUDA
template void embed_forward<CudaBackend>(const CudaBackend&, const ModelConfig&,
                                         const ModelWeights&, const ForwardBatch&, Workspace&);
template void head_forward<CudaBackend>(const CudaBackend&, const ModelConfig&, const ModelWeights&,
                                        const ForwardBatch&, Workspace&, float*);
#endif

}  // namespace dss
