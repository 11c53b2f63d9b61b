// CpuBackend::moe: router (noaux_tc), routed experts grouped by expert so each expert's weights
// are read once per step, plus the shared expert.
//
// The active experts and the shared expert run as one job list in one thread-pool dispatch
// (run_two_stage: gate+up+SwiGLU, then down, each part's rows of both stages split by estimated
// cost), instead of three dispatches per expert: at batch 1 that is 1 instead of 21 hand-offs
// per layer. The weighted sum adds each token's experts in ascending expert order, then the
// shared expert, so results are bit-identical to running the experts one after another. W8A8
// (act_quant_fp8) keeps the per-expert path (CpuBackend::ffn per expert).
#include <algorithm>
#include <array>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_scratch.h"
#include "backend/cpu/moe_router.h"
#include "base/check.h"
#include "base/phase_timer.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/vec_ops.h"

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

// The router, each token's experts and weights, and the (token, weight) pairs in bucket order by
// expert (expert_offsets / tokens / weights / pos).
void route(const CpuBackend& be, const MoeArgs& a, CpuScratch& s) {
  const ModelConfig& c = *a.cfg;
  const int32_t E = c.n_experts, K = c.n_experts_per_tok, T = a.n_tok;
  if (a.sel_weights_in != nullptr) {  // routed by the tokens' own rank already
    std::copy_n(a.sel_weights_in, static_cast<size_t>(T) * K, s.sel_weights.begin());
  } else {
    be.linear(*a.router, a.x, T, s.router.data(), s);
    // Tokens route independently (~2 us each: a prefill of 512 tokens spent ~1 ms per layer
    // on one thread); each thread has its own scratch.
    const size_t stride = route_scratch_stride(c);
    be.pool().parallel_for(T, kRouteGrainTokens, [&](int64_t t0, int64_t t1, int32_t i_thread) {
      float* scratch = s.route_scratch.data() + static_cast<size_t>(i_thread) * stride;
      for (auto t = static_cast<size_t>(t0); t < static_cast<size_t>(t1); ++t) {
        route_token(c, s.router.data() + t * E, a.router_bias, scratch, a.sel_experts + t * K,
                    s.sel_weights.data() + t * K);
      }
    });
    if (a.sel_weights_out != nullptr)
      std::copy_n(s.sel_weights.begin(), static_cast<size_t>(T) * K, a.sel_weights_out);
  }
  // Bucket (token, weight) pairs by expert (counting sort keeps token order inside a bucket).
  std::fill(s.expert_offsets.begin(), s.expert_offsets.end(), 0);
  for (int32_t i = 0; i < T * K; ++i) s.expert_offsets[static_cast<size_t>(a.sel_experts[i]) + 1]++;
  for (int32_t e = 0; e < E; ++e)
    s.expert_offsets[static_cast<size_t>(e) + 1] += s.expert_offsets[static_cast<size_t>(e)];
  const std::vector<int32_t>& off = s.expert_offsets;
  for (int32_t e = std::max(0, a.expert_begin); e < std::min(E, a.expert_end); ++e) {
    *a.routed_expert_reads += off[static_cast<size_t>(e) + 1] > off[static_cast<size_t>(e)];
  }
  std::copy(off.begin(), off.end() - 1, s.expert_cursor.begin());
  for (int32_t i = 0; i < T * K; ++i) {
    const int32_t pos = s.expert_cursor[static_cast<size_t>(a.sel_experts[i])]++;
    s.expert_tokens[static_cast<size_t>(pos)] = i / K;
    s.expert_pos[static_cast<size_t>(i)] = pos;
    s.expert_weights[static_cast<size_t>(pos)] = s.sel_weights[static_cast<size_t>(i)];
  }
}

// The experts one at a time through CpuBackend::ffn (the W8A8 path); the buckets already made.
void moe_per_expert(const CpuBackend& be, const MoeArgs& a, CpuScratch& s) {
  const ModelConfig& c = *a.cfg;
  const int32_t E = c.n_experts, T = a.n_tok;
  const int64_t d = c.d_model;
  const std::vector<int32_t>& off = s.expert_offsets;
  float* out = a.out;
  std::fill(out, out + T * d, 0.0f);
  for (int32_t e = std::max(0, a.expert_begin); e < std::min(E, a.expert_end); ++e) {
    const int32_t b = off[static_cast<size_t>(e)], n = off[static_cast<size_t>(e) + 1] - b;
    if (n == 0) continue;
    for (int32_t j = 0; j < n; ++j) {
      const int32_t t = s.expert_tokens[static_cast<size_t>(b + j)];
      std::copy(a.x + t * d, a.x + (t + 1) * d, s.xe.data() + j * d);
    }
    be.ffn(a.experts[e], s.xe.data(), n, s.ye.data(), s);
    for (int32_t j = 0; j < n; ++j) {
      const int32_t t = s.expert_tokens[static_cast<size_t>(b + j)];
      cpu::axpy(s.expert_weights[static_cast<size_t>(b + j)], s.ye.data() + j * d, out + t * d, d);
    }
  }
  if (a.shared != nullptr) {
    be.ffn(*a.shared, a.x, T, s.ye.data(), s);
    for (int32_t t = 0; t < T; ++t) cpu::axpy(1.0f, s.ye.data() + t * d, out + t * d, d);
  }
}

// The job list: the active experts in bucket order (their rows copied into s.xe on all threads,
// a prefill's 512 tokens x 6 experts being 12.6 MB, in chunks of kRouteGrainTokens tokens' rows),
// then the shared expert. Returns the number of jobs.
int32_t expert_jobs(ThreadPool& pool, const MoeArgs& a, CpuScratch& s,
                    std::array<ExpertJob, kMaxJobs>& jobs) {
  const ModelConfig& c = *a.cfg;
  const int32_t E = c.n_experts, K = c.n_experts_per_tok, T = a.n_tok;
  const int64_t d = c.d_model;
  pool.parallel_for(T * K, kRouteGrainTokens * K, [&](int64_t p0, int64_t p1, int32_t) {
    for (int64_t p = p0; p < p1; ++p) {
      const int32_t t = s.expert_tokens[static_cast<size_t>(p)];
      std::copy(a.x + t * d, a.x + (t + 1) * d, s.xe.data() + p * d);
    }
  });
  const std::vector<int32_t>& off = s.expert_offsets;
  int32_t n_jobs = 0;
  // The routed rows' gate/up stride: the widest expert width (all equal; a tensor-parallel
  // rank's are the slice's), so a bucket row keeps its place whichever experts are local.
  const auto F = static_cast<int32_t>(c.d_ff_expert);
  for (int32_t e = std::max(0, a.expert_begin); e < std::min(E, a.expert_end); ++e) {
    const int32_t b = off[static_cast<size_t>(e)], n = off[static_cast<size_t>(e) + 1] - b;
    if (n == 0) continue;
    jobs[static_cast<size_t>(n_jobs++)] = {&a.experts[e],
                                           n,
                                           static_cast<int32_t>(a.experts[e].gate.n_rows),
                                           s.xe.data() + static_cast<size_t>(b) * d,
                                           s.gate.data() + static_cast<size_t>(b) * F,
                                           s.up.data() + static_cast<size_t>(b) * F,
                                           s.ye.data() + static_cast<size_t>(b) * d};
  }
  const size_t n_routed = static_cast<size_t>(T) * K;  // rows of the routed buffers
  if (a.shared != nullptr) {
    jobs[static_cast<size_t>(n_jobs++)] = {a.shared,
                                           T,
                                           static_cast<int32_t>(a.shared->gate.n_rows),
                                           a.x,
                                           s.gate.data() + n_routed * F,
                                           s.up.data() + n_routed * F,
                                           s.ye.data() + n_routed * d};
  }
  return n_jobs;
}

// Weighted sum per token: its experts in ascending expert order, then the shared expert (the
// order that makes the result equal to running the experts one after another).
void weighted_sum(ThreadPool& pool, const MoeArgs& a, CpuScratch& s) {
  const ModelConfig& c = *a.cfg;
  const int32_t K = c.n_experts_per_tok;
  const int64_t d = c.d_model;
  const size_t n_routed = static_cast<size_t>(a.n_tok) * K;
  // Bucket positions of the local experts (the others' rows were not computed here).
  const int32_t E = c.n_experts;
  const int32_t p_begin = s.expert_offsets[static_cast<size_t>(std::clamp(a.expert_begin, 0, E))];
  const int32_t p_end = s.expert_offsets[static_cast<size_t>(std::clamp(a.expert_end, 0, E))];
  pool.parallel_for(a.n_tok, 1, [&](int64_t t0, int64_t t1, int32_t) {
    for (auto t = static_cast<int32_t>(t0); t < t1; ++t) {
      std::array<int32_t, kMaxChoices> pos{};  // the token's bucket positions, ascending
      for (int32_t k = 0; k < K; ++k)
        pos[static_cast<size_t>(k)] = s.expert_pos[static_cast<size_t>(t * K + k)];
      std::sort(pos.begin(), pos.begin() + K);
      float* o = a.out + static_cast<size_t>(t) * d;
      std::fill(o, o + d, 0.0f);
      for (int32_t k = 0; k < K; ++k) {
        const int32_t p = pos[static_cast<size_t>(k)];
        if (p < p_begin || p >= p_end) continue;
        cpu::axpy(s.expert_weights[static_cast<size_t>(p)],
                  s.ye.data() + static_cast<size_t>(p) * d, o, d);
      }
      if (a.shared != nullptr)
        cpu::axpy(1.0f, s.ye.data() + (n_routed + static_cast<size_t>(t)) * d, o, d);
    }
  });
}

}  // namespace

void CpuBackend::moe(const MoeArgs& a, BackendScratch& scratch) const {
  CpuScratch& s = cpu_scratch(scratch);
  const int64_t d = a.cfg->d_model;
  DSS_CHECK(a.n_tok <= s.limits.max_tokens, "tokens ", a.n_tok, " > scratch ", s.limits.max_tokens);
  DSS_PHASES(phase, kMoeRoute);
  route(*this, a, s);
  DSS_PHASE_NEXT(phase, kMoeExperts);
  if (o_.act_quant_fp8) {  // W8A8: activations are quantised per linear call
    moe_per_expert(*this, a, s);
    return;
  }
  std::array<ExpertJob, kMaxJobs> jobs;
  const int32_t n_jobs = expert_jobs(*pool_, a, s, jobs);
  // One dispatch for both stages: a part's down rows wait only for the gate/up units of their
  // own expert (base/two_stage_jobs.h). Up to 16 tokens per step (decode: an expert sees 1-3 of
  // them), one part per thread, the longest weight streams; more tokens, 4 parts per thread that
  // the threads claim as they go (docs/measurements.md, MoE dispatch).
  const int32_t n_parts = (a.n_tok <= 16 ? 1 : 4) * pool_->n_threads();
  run_two_stage(
      *pool_, s.moe_claims, n_jobs,
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
  DSS_PHASE_NEXT(phase, kMoeSum);
  weighted_sum(*pool_, a, s);
}

}  // namespace dss
