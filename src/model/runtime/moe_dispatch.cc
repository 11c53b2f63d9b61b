#include "model/runtime/moe_dispatch.h"

#include <algorithm>
#include <bit>
#include <span>

#include "backend/cpu/cpu_backend.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/phase_timer.h"
#include "dist/local_comm.h"
#include "dist/mpi_comm.h"
#include "model/deepseek/moe.h"
#if DSS_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace dss {

namespace {

// The layer's weights and n_tok rows of x into out, with their experts in sel_experts.
MoeArgs base_args(const ModelConfig& c, const MoeWeights& m, Workspace& ws, int32_t n_tok,
                  const float* x, float* out, int32_t* sel_experts) {
  MoeArgs a;
  a.cfg = &c;
  a.router = &m.router;
  a.router_bias = m.router_bias.data();
  a.experts = m.experts.data();
  a.routed_expert_reads = &ws.routed_expert_reads;
  a.n_tok = n_tok;
  a.x = x;
  a.out = out;
  a.sel_experts = sel_experts;
  return a;
}

// Step 2's packing: rows for rank 0 first, then rank 1, ...; ws.ep_counts row `me` gets the
// counts, ws.ep_tokens the token of each row. Returns the rows packed.
int64_t pack_rows(const ModelConfig& c, int32_t S, int32_t me, int32_t n_tok, Workspace& ws) {
  const int32_t K = c.n_experts_per_tok, E_per = c.n_experts / S;
  const int64_t d = c.d_model, W = d + 2 * K;
  int64_t n = 0;
  for (int32_t p = 0; p < S; ++p) {
    const int64_t n0 = n;
    for (int32_t t = 0; t < n_tok; ++t) {
      const int32_t* e = ws.sel_experts.data() + static_cast<size_t>(t) * K;
      if (std::none_of(e, e + K, [&](int32_t x) { return x / E_per == p; })) continue;
      float* row = ws.ep_send.data() + n * W;
      std::copy_n(ws.xn.data() + t * d, d, row);
      for (int32_t k = 0; k < K; ++k) row[d + k] = std::bit_cast<float>(e[k]);
      std::copy_n(ws.ep_weights.data() + static_cast<size_t>(t) * K, K, row + d + K);
      ws.ep_tokens[static_cast<size_t>(n)] = t;
      ++n;
    }
    ws.ep_counts[static_cast<size_t>(me) * S + p] = n - n0;
  }
  return n;
}

// all_to_all_v layout: rank p's block of `send` has counts[me][p] rows, of `recv` counts[p][me],
// each `width` elements. Returns the rows received.
AllToAllLayout layout_of(std::span<const int64_t> counts, int32_t S, int32_t me, int64_t width,
                         bool back, std::span<int64_t> store, int64_t* n_recv) {
  int64_t so = 0, ro = 0;
  for (int32_t p = 0; p < S; ++p) {
    int64_t out = counts[static_cast<size_t>(me) * S + p];
    int64_t in = counts[static_cast<size_t>(p) * S + me];
    if (back) std::swap(out, in);
    store[static_cast<size_t>(p)] = out * width;
    store[static_cast<size_t>(S + p)] = so;
    store[static_cast<size_t>(2 * S + p)] = in * width;
    store[static_cast<size_t>(3 * S + p)] = ro;
    so += out * width;
    ro += in * width;
  }
  *n_recv = ro / width;
  const auto s = static_cast<size_t>(S);
  return {store.first(s), store.subspan(s, s), store.subspan(2 * s, s), store.subspan(3 * s, s)};
}

// Step 3: this rank's experts on the n received rows, max_tokens rows at a time, into ws.ep_out.
template <ModelBackend B>
void run_received(const B& be, const ModelConfig& c, const MoeWeights& m, int64_t n,
                  Workspace& ws) {
  const int32_t K = c.n_experts_per_tok;
  const int64_t d = c.d_model, W = d + 2 * K, T = ws.limits.max_tokens;
  for (int64_t r0 = 0; r0 < n; r0 += T) {
    const auto rows = static_cast<int32_t>(std::min(T, n - r0));
    for (int32_t j = 0; j < rows; ++j) {
      const float* row = ws.ep_recv.data() + (r0 + j) * W;
      std::copy_n(row, d, ws.ep_x.data() + j * d);
      for (int32_t k = 0; k < K; ++k)
        ws.ep_ids[static_cast<size_t>(j) * K + k] = std::bit_cast<int32_t>(row[d + k]);
      std::copy_n(row + d + K, K, ws.ep_weights.data() + static_cast<size_t>(j) * K);
    }
    MoeArgs a = base_args(c, m, ws, rows, ws.ep_x.data(), ws.ep_y.data(), ws.ep_ids.data());
    a.expert_begin = m.expert_begin;
    a.expert_end = m.expert_end;
    a.sel_weights_in = ws.ep_weights.data();
    be.moe(a, *ws.backend);
    std::copy_n(ws.ep_y.data(), rows * d, ws.ep_out.data() + r0 * d);
  }
}

}  // namespace

template <ModelBackend B, Communicator C>
void moe_dispatch_forward(const B& be, C& comm, const ModelConfig& c, const MoeWeights& m,
                          int32_t i_layer, int32_t n_tok, Workspace& ws) {
  const int32_t S = comm.size(), me = comm.rank(), K = c.n_experts_per_tok;
  const int64_t d = c.d_model, W = d + 2 * K;
  DSS_CHECK(ws.limits.ep_ranks == S && c.n_experts % S == 0, "MoE exchange over ", S,
            " ranks with a workspace for ", ws.limits.ep_ranks);
  if (n_tok > 0) {  // 1. route; the shared expert alone (no routed expert in [0, 0))
    MoeArgs a = base_args(c, m, ws, n_tok, ws.xn.data(), ws.tmp.data(), ws.sel_experts.data());
    a.expert_begin = a.expert_end = 0;
    a.shared = m.has_shared ? &m.shared : nullptr;
    a.sel_weights_out = ws.ep_weights.data();
    be.moe(a, *ws.backend);
    record_routing(c, i_layer, n_tok, ws);
  }
  const int64_t n_sent = pack_rows(c, S, me, n_tok, ws);  // 2.
  const int64_t t0 = steady_ns();
  int64_t n_recv = 0, n_back = 0;
  {
    DSS_PHASE_SCOPE(kCollective);
    const auto mine = std::span<const int64_t>(ws.ep_counts)
                          .subspan(static_cast<size_t>(me) * S, static_cast<size_t>(S));
    std::copy(mine.begin(), mine.end(), ws.ep_layout.begin());  // the send block, apart from recv
    comm.allgather(std::span<const int64_t>(ws.ep_layout.first(static_cast<size_t>(S))),
                   ws.ep_counts);
    const AllToAllLayout out = layout_of(ws.ep_counts, S, me, W, false, ws.ep_layout, &n_recv);
    comm.all_to_all_v(std::span<const float>(ws.ep_send.first(static_cast<size_t>(n_sent * W))),
                      ws.ep_recv.first(static_cast<size_t>(n_recv * W)), out);
  }
  const int64_t t1 = steady_ns();
  run_received(be, c, m, n_recv, ws);  // 3.
  const int64_t t2 = steady_ns();
  {
    DSS_PHASE_SCOPE(kCollective);
    const AllToAllLayout back = layout_of(ws.ep_counts, S, me, d, true, ws.ep_layout, &n_back);
    DSS_CHECK(n_back == n_sent, "MoE exchange: ", n_back, " rows back for ", n_sent, " sent");
    comm.all_to_all_v(std::span<const float>(ws.ep_out.first(static_cast<size_t>(n_recv * d))),
                      ws.ep_back.first(static_cast<size_t>(n_sent * d)), back);
  }
  ws.collective_ns += (t1 - t0) + (steady_ns() - t2);
  ws.collective_bytes += (n_sent * W + n_recv * d) * static_cast<int64_t>(sizeof(float)) +
                         S * static_cast<int64_t>(sizeof(int64_t));
  for (int64_t j = 0; j < n_sent; ++j) {  // 4. rank order, then the order sent
    const int32_t t = ws.ep_tokens[static_cast<size_t>(j)];
    be.add_rows(ws.ep_back.data() + j * d, d, ws.tmp.data() + t * d);
  }
}

template void moe_dispatch_forward<CpuBackend, MpiComm>(const CpuBackend&, MpiComm&,
                                                        const ModelConfig&, const MoeWeights&,
                                                        int32_t, int32_t, Workspace&);
template void moe_dispatch_forward<CpuBackend, LocalComm>(const CpuBackend&, LocalComm&,
                                                          const ModelConfig&, const MoeWeights&,
                                                          int32_t, int32_t, Workspace&);
#if DSS_CUDA  // Model::layer_forward's reference; DP attention is refused on CUDA at load
template void moe_dispatch_forward<CudaBackend, LocalComm>(const CudaBackend&, LocalComm&,
                                                           const ModelConfig&, const MoeWeights&,
                                                           int32_t, int32_t, Workspace&);
#endif

}  // namespace dss
