#include "model/deepseek/moe.h"

#include <algorithm>

#include "backend/cpu/cpu_backend.h"
#if DSS_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace dss {

template <ModelBackend B>
void moe_forward(const B& be, const ModelConfig& c, const MoeWeights& m, int32_t i_layer,
                 int32_t n_tok, Workspace& ws) {
  MoeArgs a;
  a.cfg = &c;
  a.router = &m.router;
  a.router_bias = m.router_bias.data();
  a.experts = m.experts.data();
  a.expert_begin = m.expert_begin;
  a.expert_end = m.expert_end;
  a.shared = m.has_shared ? &m.shared : nullptr;
  a.n_tok = n_tok;
  a.x = ws.xn.data();
  a.out = ws.tmp.data();
  a.sel_experts = ws.sel_experts.data();
  a.routed_expert_reads = &ws.routed_expert_reads;
  be.moe(a, *ws.backend);
  record_routing(c, i_layer, n_tok, ws);
}

void record_routing(const ModelConfig& c, int32_t i_layer, int32_t n_tok, Workspace& ws) {
  if (ws.trace == nullptr) return;
  const int32_t K = c.n_experts_per_tok;
  for (int32_t t = 0; t < n_tok; ++t) {
    std::vector<int32_t> e(ws.sel_experts.begin() + t * K, ws.sel_experts.begin() + (t + 1) * K);
    std::sort(e.begin(), e.end());
    ws.trace->experts[static_cast<size_t>(i_layer)].push_back(std::move(e));
  }
}

template void moe_forward<CpuBackend>(const CpuBackend&, const ModelConfig&, const MoeWeights&,
                                      int32_t, int32_t, Workspace&);
#if DSS_CUDA
template void moe_forward<CudaBackend>(const CudaBackend&, const ModelConfig&, const MoeWeights&,
                                       int32_t, int32_t, Workspace&);
#endif

}  // namespace dss
