#include "backend/cpu/cpu_scratch.h"

#include <algorithm>

#include "kernels/cpu/mla_attn.h"

namespace dss {

CpuScratch::CpuScratch(const ModelConfig& c, const WorkspaceLimits& lim) : limits(lim) {
  const auto T = static_cast<size_t>(lim.max_tokens);
  const auto S = static_cast<size_t>(lim.max_kv_len);
  const auto d = static_cast<size_t>(c.d_model);
  const auto H = static_cast<size_t>(c.n_heads), R = static_cast<size_t>(c.kv_lora_rank);
  const auto dr = static_cast<size_t>(c.d_rope), tile = static_cast<size_t>(kMlaPrefillTile);
  const auto nt = static_cast<size_t>(std::max(1, lim.n_threads));
  const auto chunk = static_cast<size_t>(kMlaAbsorbChunk);
  rope_cos.resize(dr / 2);
  rope_sin.resize(dr / 2);
  q_lat.resize(chunk * H * R);
  q_pe.resize(chunk * H * dr);
  o_lat.resize(chunk * H * R);
  uv.resize(chunk * H * static_cast<size_t>(c.d_nope + c.d_v));
  absorb_x.resize(nt * chunk * std::max(static_cast<size_t>(c.d_nope), R));
  const auto n_parts = static_cast<size_t>(kMlaDecodeMaxParts);
  part_m.resize(n_parts * H);
  part_l.resize(n_parts * H);
  part_o.resize(n_parts * H * R);
  attn_scratch.resize(
      nt * static_cast<size_t>(cpu::mla_attn_scratch_floats(c.n_heads, c.kv_lora_rank, c.d_rope)));
  tile_lat.resize(tile * R);
  tile_pe.resize(tile * dr);
  tile_kv.resize(tile * H * static_cast<size_t>(c.d_nope + c.d_v));
  run_m.resize(T * H);
  run_l.resize(T * H);
  tile_pet.resize(dr * tile);
  tile_nvalid.resize(T);
  tile_kt.resize(nt * static_cast<size_t>(c.d_nope) * tile);
  tile_s.resize(nt * T * tile);
  tile_corr.resize(nt * T);
  tile_used.resize(S / tile + 1);
  const size_t ff =
      static_cast<size_t>(std::max(c.d_ff, std::max(c.n_shared_experts, 1) * c.d_ff_expert));
  // Dense FFN: [T, ff]; MoE: the routed experts' rows [T * k, d_ff_expert] then the shared [T, ff].
  const size_t moe_ff =
      T * static_cast<size_t>(c.n_experts_per_tok) * static_cast<size_t>(c.d_ff_expert) + T * ff;
  gate.resize(std::max(T * ff, moe_ff));
  up.resize(std::max(T * ff, moe_ff));
  router.resize(T * static_cast<size_t>(c.n_experts));
  route_scratch.resize(nt * route_scratch_stride(c));
  const size_t k = T * static_cast<size_t>(c.n_experts_per_tok);
  sel_weights.resize(k);
  expert_offsets.resize(static_cast<size_t>(c.n_experts + 1));
  expert_cursor.resize(static_cast<size_t>(c.n_experts));
  expert_tokens.resize(k);
  expert_weights.resize(k);
  expert_pos.resize(k);
  xe.resize(k * d);
  ye.resize(k * d + T * d);
  if (c.n_experts > 0) {
    const int64_t jobs = std::min<int64_t>(c.n_experts, static_cast<int64_t>(k)) + 1;
    const int64_t units_a = (static_cast<int64_t>(ff) + kMoeRowGrain - 1) / kMoeRowGrain;
    const int64_t units_b = (static_cast<int64_t>(d) + kMoeRowGrain - 1) / kMoeRowGrain;
    moe_claims.reserve(jobs * (units_a + units_b), static_cast<int32_t>(jobs));
  }
  if (lim.act_quant) {
    const size_t widest = std::max({lim.mtp ? 2 * d : d, static_cast<size_t>(c.q_lora_rank),
                                    static_cast<size_t>(c.n_heads * c.d_v), ff});
    act_q.resize(std::max(T * widest, tile * R));
  }
  if (c.index_n_heads > 0) {
    idx_scores.resize(nt * S);
    idx_order.resize(nt * S);
    idx_cand.resize(S);
    idx_counts.resize(nt);
  }
}

}  // namespace dss
