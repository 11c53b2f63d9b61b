// Mixture of experts block: router (noaux_tc), routed experts grouped by expert so each expert's
// weights are read once per step, plus the shared expert. Reads ws.xn, writes ws.tmp.
//
// The active experts and the shared expert run as one job list in one thread-pool dispatch
// (run_two_stage: gate+up+SwiGLU, then down, each part's rows of both stages split by estimated
// cost), instead of three dispatches per expert: at batch 1 that is 1 instead of 21 hand-offs
// per layer. The weighted sum adds each token's experts in ascending expert order, then the
// shared expert, so results are bit-identical to running the experts one after another. W8A8
// (--act-quant fp8) keeps the per-expert path (Model::ffn).
#include <algorithm>
#include <array>

#include "base/phase_timer.h"
#include "base/two_stage_jobs.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/vec_ops.h"
#include "model/deepseek/moe_router.h"
#include "model/runtime/model.h"

namespace dss {

namespace {

// One expert's share of a MoE step: n_tok rows of x through gate/up (d_ff rows each) and down.
struct ExpertJob {
  const FfnWeights* f;
  int32_t n_tok, d_ff;
  const float* x;  // [n_tok, d_model]
  float* g;        // [n_tok, d_ff]: gate, then silu(gate) * up
  float* u;        // [n_tok, d_ff]
  float* y;        // [n_tok, d_model]
};
inline constexpr int32_t kMaxJobs = 1024 + 1;  // experts (ModelConfig allows <= 1024) + shared
inline constexpr int32_t kMaxChoices = 64;     // num_experts_per_tok (ModelConfig allows <= 64)
// Grain of the routing's parallel loops (tokens routed; their rows gathered): up to 32 tokens
// (decode) stay on the calling thread, where a dispatch costs more than it saves.
inline constexpr int64_t kRouteGrainTokens = 32;

}  // namespace

void Model::moe_route(int32_t i_layer, const MoeWeights& m, int32_t T, Workspace& ws) const {
  const ModelConfig& c = cfg_;
  const int32_t E = c.n_experts, K = c.n_experts_per_tok;
  mm(m.router, ws.xn.data(), T, ws.router.data());
  // Tokens route independently (~2 us each: a prefill of 512 tokens spent ~1 ms per layer here
  // on one thread); each thread has its own scratch.
  const size_t stride = route_scratch_stride(c);
  pool_->parallel_for(T, kRouteGrainTokens, [&](int64_t t0, int64_t t1, int32_t i_thread) {
    float* scratch = ws.route_scratch.data() + static_cast<size_t>(i_thread) * stride;
    for (auto t = static_cast<size_t>(t0); t < static_cast<size_t>(t1); ++t) {
      route_token(c, ws.router.data() + t * E, m.router_bias.data(), scratch,
                  ws.sel_experts.data() + t * K, ws.sel_weights.data() + t * K);
    }
  });
  if (ws.trace != nullptr) {
    for (int32_t t = 0; t < T; ++t) {
      std::vector<int32_t> e(ws.sel_experts.begin() + t * K, ws.sel_experts.begin() + (t + 1) * K);
      std::sort(e.begin(), e.end());
      ws.trace->experts[static_cast<size_t>(i_layer)].push_back(std::move(e));
    }
  }
  // Bucket (token, weight) pairs by expert (counting sort keeps token order inside a bucket).
  std::fill(ws.expert_offsets.begin(), ws.expert_offsets.end(), 0);
  for (int32_t i = 0; i < T * K; ++i)
    ws.expert_offsets[static_cast<size_t>(ws.sel_experts[static_cast<size_t>(i)]) + 1]++;
  for (int32_t e = 0; e < E; ++e)
    ws.expert_offsets[static_cast<size_t>(e) + 1] += ws.expert_offsets[static_cast<size_t>(e)];
  const std::vector<int32_t>& off = ws.expert_offsets;
  for (int32_t e = 0; e < E; ++e) {
    ws.routed_expert_reads += off[static_cast<size_t>(e) + 1] > off[static_cast<size_t>(e)];
  }
  std::copy(off.begin(), off.end() - 1, ws.expert_cursor.begin());
  for (int32_t i = 0; i < T * K; ++i) {
    const int32_t pos =
        ws.expert_cursor[static_cast<size_t>(ws.sel_experts[static_cast<size_t>(i)])]++;
    ws.expert_tokens[static_cast<size_t>(pos)] = i / K;
    ws.expert_pos[static_cast<size_t>(i)] = pos;
    ws.expert_weights[static_cast<size_t>(pos)] = ws.sel_weights[static_cast<size_t>(i)];
  }
}

void Model::moe(int32_t i_layer, const MoeWeights& m, int32_t T, Workspace& ws) const {
  const ModelConfig& c = cfg_;
  const int32_t E = c.n_experts, K = c.n_experts_per_tok;
  const int64_t d = c.d_model;
  DSS_PHASES(phase, kMoeRoute);
  moe_route(i_layer, m, T, ws);
  DSS_PHASE_NEXT(phase, kMoeExperts);
  const std::vector<int32_t>& off = ws.expert_offsets;
  float* out = ws.tmp.data();
  if (act_quant_fp8_) {  // W8A8: activations are quantised per matmul call inside mm()
    moe_per_expert(m, T, ws);
    return;
  }
  // Job list: active experts (bucket order), then the shared expert.
  std::array<ExpertJob, kMaxJobs> jobs;
  int32_t n_jobs = 0;
  const int32_t F = c.d_ff_expert, F_sh = c.n_shared_experts * c.d_ff_expert;
  // The routed rows in bucket order (xe), copied on all threads (a prefill's 512 tokens x 6
  // experts are 12.6 MB) in chunks of kRouteGrainTokens tokens' rows.
  pool_->parallel_for(T * K, kRouteGrainTokens * K, [&](int64_t p0, int64_t p1, int32_t) {
    for (int64_t p = p0; p < p1; ++p) {
      const int32_t t = ws.expert_tokens[static_cast<size_t>(p)];
      std::copy(ws.xn.data() + t * d, ws.xn.data() + (t + 1) * d, ws.xe.data() + p * d);
    }
  });
  for (int32_t e = 0; e < E; ++e) {
    const int32_t b = off[static_cast<size_t>(e)], n = off[static_cast<size_t>(e) + 1] - b;
    if (n == 0) continue;
    jobs[static_cast<size_t>(n_jobs++)] = {&m.experts[static_cast<size_t>(e)],
                                           n,
                                           F,
                                           ws.xe.data() + static_cast<size_t>(b) * d,
                                           ws.gate.data() + static_cast<size_t>(b) * F,
                                           ws.up.data() + static_cast<size_t>(b) * F,
                                           ws.ye.data() + static_cast<size_t>(b) * d};
  }
  const size_t n_routed = static_cast<size_t>(T) * K;  // rows of the routed buffers
  if (m.has_shared) {
    jobs[static_cast<size_t>(n_jobs++)] = {&m.shared,
                                           T,
                                           F_sh,
                                           ws.xn.data(),
                                           ws.gate.data() + n_routed * F,
                                           ws.up.data() + n_routed * F,
                                           ws.ye.data() + n_routed * d};
  }
  // One dispatch for both stages: a part's down rows wait only for the gate/up units of their
  // own expert (base/two_stage_jobs.h). Up to 16 tokens per step (decode: an expert sees 1-3 of
  // them), one part per thread, the longest weight streams (bench-model bs4 205/231 -> 241/246,
  // bs16 373/400/396 -> 414/423/402 tok/s against two dispatches of 4 guided shares per thread;
  // bs1 unchanged); more tokens, 4 parts per thread that the threads claim as they go.
  const int32_t n_parts = (T <= 16 ? 1 : 4) * pool_->n_threads();
  run_two_stage(
      *pool_, ws.moe_claims, n_jobs,
      [&](int32_t j) {
        // A row's cost: its tokens plus ~4 tokens' worth of weight reading, times its columns.
        const ExpertJob& e = jobs[static_cast<size_t>(j)];
        return TwoStageShape{e.d_ff, d, 2 * d * (e.n_tok + 4), int64_t{e.d_ff} * (e.n_tok + 4)};
      },
      kMoeRowGrain, n_parts,
      [&](int32_t i, int64_t r0, int64_t r1) {
        const ExpertJob& j = jobs[static_cast<size_t>(i)];
        cpu::matmul_rows(j.f->gate, j.x, j.n_tok, j.g, r0, r1);
        cpu::matmul_rows(j.f->up, j.x, j.n_tok, j.u, r0, r1);
        for (int32_t t = 0; t < j.n_tok; ++t) {
          const size_t o = static_cast<size_t>(t) * j.d_ff + r0;
          cpu::silu_mul(j.g + o, j.u + o, r1 - r0, j.g + o);
        }
      },
      [&](int32_t i, int64_t r0, int64_t r1) {
        const ExpertJob& j = jobs[static_cast<size_t>(i)];
        cpu::matmul_rows(j.f->down, j.g, j.n_tok, j.y, r0, r1);
      });
  // Weighted sum per token: its experts in ascending expert order, then the shared expert.
  DSS_PHASE_NEXT(phase, kMoeSum);
  pool_->parallel_for(T, 1, [&](int64_t t0, int64_t t1, int32_t) {
    for (auto t = static_cast<int32_t>(t0); t < t1; ++t) {
      std::array<int32_t, kMaxChoices>
          pos{};  // the token's bucket positions, ascending = expert order
      for (int32_t k = 0; k < K; ++k)
        pos[static_cast<size_t>(k)] = ws.expert_pos[static_cast<size_t>(t * K + k)];
      std::sort(pos.begin(), pos.begin() + K);
      float* o = out + static_cast<size_t>(t) * d;
      std::fill(o, o + d, 0.0f);
      for (int32_t k = 0; k < K; ++k) {
        const int32_t p = pos[static_cast<size_t>(k)];
        cpu::axpy(ws.expert_weights[static_cast<size_t>(p)],
                  ws.ye.data() + static_cast<size_t>(p) * d, o, d);
      }
      if (m.has_shared)
        cpu::axpy(1.0f, ws.ye.data() + (n_routed + static_cast<size_t>(t)) * d, o, d);
    }
  });
}

void Model::moe_per_expert(const MoeWeights& m, int32_t T, Workspace& ws) const {
  const ModelConfig& c = cfg_;
  const int32_t E = c.n_experts;
  const int64_t d = c.d_model;
  const std::vector<int32_t>& off = ws.expert_offsets;
  float* out = ws.tmp.data();
  std::fill(out, out + T * d, 0.0f);
  for (int32_t e = 0; e < E; ++e) {
    const int32_t b = off[static_cast<size_t>(e)], n = off[static_cast<size_t>(e) + 1] - b;
    if (n == 0) continue;
    for (int32_t j = 0; j < n; ++j) {
      const int32_t t = ws.expert_tokens[static_cast<size_t>(b + j)];
      std::copy(ws.xn.data() + t * d, ws.xn.data() + (t + 1) * d, ws.xe.data() + j * d);
    }
    ffn(m.experts[static_cast<size_t>(e)], n, c.d_ff_expert, ws.xe.data(), ws.ye.data(), ws);
    for (int32_t j = 0; j < n; ++j) {
      const int32_t t = ws.expert_tokens[static_cast<size_t>(b + j)];
      cpu::axpy(ws.expert_weights[static_cast<size_t>(b + j)], ws.ye.data() + j * d, out + t * d,
                d);
    }
  }
  if (m.has_shared) {
    ffn(m.shared, T, c.n_shared_experts * c.d_ff_expert, ws.xn.data(), ws.ye.data(), ws);
    for (int32_t t = 0; t < T; ++t) cpu::axpy(1.0f, ws.ye.data() + t * d, out + t * d, d);
  }
}

}  // namespace dss
