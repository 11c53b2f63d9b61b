// CpuBackend's per-token operations around the cache write (backend/backend.h MlaRopeArgs,
// IndexerRopeArgs): O(T x (d_rope x n_heads + d_latent)) scalar work on the calling thread, a
// few microseconds per token against the milliseconds of the projections around them.
#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_scratch.h"
#include "base/check.h"
#include "kernels/cpu/fp8_sim.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/vec_ops.h"

namespace dss {

Buffer CpuBackend::allocate(size_t bytes, MemoryUse use) const {
  return Buffer::host(bytes, /*prefault=*/use == MemoryUse::kKvCache);
}

void CpuBackend::mla_rope_rows(const MlaRopeArgs& a, BackendScratch& s) const {
  CpuScratch& c = cpu_scratch(s);
  const int32_t R = a.shape.kv_lora_rank, dr = a.shape.d_rope, n_pairs = dr / 2;
  const int32_t H = a.shape.n_heads, d_qk = a.shape.d_qk();
  DSS_CHECK(static_cast<size_t>(n_pairs) <= c.rope_cos.size(), "rope scratch of ",
            c.rope_cos.size(), " pairs < ", n_pairs);
  float* cos = c.rope_cos.data();
  float* sin = c.rope_sin.data();
  for (int32_t t = 0; t < a.n_tok; ++t) {
    cpu::rope_angles(a.rope_freqs, n_pairs, a.positions[t], cos, sin);
    const float* kva = a.kv_a + static_cast<size_t>(t) * (R + dr);
    float* row = a.rows + static_cast<size_t>(t) * a.d_row;
    cpu::rmsnorm(kva, *a.kv_a_norm, R, a.eps, row);
    // V3.2 simulates an FP8 latent cache: e4m3 per 128 values, then back. (An fp8 cache stores
    // exactly these values; on V3 with an fp8 cache, KvCache::store quantises the same way.)
    if (a.fp8_latent) {
      for (int32_t j = 0; j < R; j += 128) {
        const float sc = cpu::act_quant_ue8m0(row + j, 128, row + j);
        for (int32_t k = j; k < j + 128; ++k) row[k] *= sc;
      }
    }
    std::copy(kva + R, kva + R + dr, row + R);
    cpu::rope_rotate_interleaved(row + R, n_pairs, cos, sin);
    for (int32_t h = 0; h < H; ++h) {
      float* q_pe = a.q + (static_cast<size_t>(t) * H + h) * d_qk + a.shape.d_nope;
      cpu::rope_rotate_interleaved(q_pe, n_pairs, cos, sin);
    }
  }
}

void CpuBackend::indexer_rope_quant(const IndexerRopeArgs& a, BackendScratch& s) const {
  CpuScratch& c = cpu_scratch(s);
  const int32_t HI = a.n_heads, D = a.head_dim, n_pairs = a.d_rope / 2;
  DSS_CHECK(static_cast<size_t>(n_pairs) <= c.rope_cos.size(), "rope scratch of ",
            c.rope_cos.size(), " pairs < ", n_pairs);
  float* cos = c.rope_cos.data();
  float* sin = c.rope_sin.data();
  const float w_scale = 1.0f / std::sqrt(static_cast<float>(HI));
  for (int32_t t = 0; t < a.n_tok; ++t) {
    cpu::rope_angles(a.rope_freqs, n_pairs, a.positions[t], cos, sin);
    float* k = a.k + static_cast<size_t>(t) * D;
    cpu::layer_norm(k, a.k_norm_w, a.k_norm_b, D, 1e-6f, k);
    cpu::rope_rotate_half_split(k, n_pairs, cos, sin);
    cpu::hadamard_transform(k, D);
    float* row = a.rows + static_cast<size_t>(t) * a.d_row + a.key_offset;
    row[D] = cpu::act_quant_ue8m0(k, D, row);
    for (int32_t h = 0; h < HI; ++h) {
      float* q = a.q + (static_cast<size_t>(t) * HI + h) * D;
      cpu::rope_rotate_half_split(q, n_pairs, cos, sin);
      cpu::hadamard_transform(q, D);
      const float sq = cpu::act_quant_ue8m0(q, D, q);
      float& coef = a.coef[static_cast<size_t>(t) * HI + h];
      coef = coef * w_scale * sq * (1.0f / std::sqrt(static_cast<float>(D)));
    }
  }
}

void CpuBackend::kv_store_rows(KvCache& kv, int32_t i_layer, const int32_t* slots,
                               const float* rows, int32_t n) const {
  const int32_t d_row = kv.layout().d_row();
  for (int32_t t = 0; t < n; ++t)
    kv.store(i_layer, slots[t], rows + static_cast<size_t>(t) * d_row);
}

}  // namespace dss
