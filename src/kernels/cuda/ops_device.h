// Device side of the CUDA backend's operations (backend/cuda/cuda_backend.h), compiled by nvcc:
// plain types only (the project's C++20 headers stay with the host compiler). Every pointer is
// device memory unless named `host`; every function enqueues on `stream` (a cudaStream_t) and
// returns nullptr or a static CUDA error string (the launch's; kernels run asynchronously).
// The arithmetic follows the CPU backend's contracts in backend/backend.h, in float32 with
// float32 accumulation; only summation order differs from the CPU kernels (tests/cuda compare
// each operation with the CPU backend under a normalised error bound).
#pragma once

#include <cstdint>

namespace dss::cuda::dev {

// dss::DType's values (tensor/dtype.h; the host side static_asserts they agree).
enum DevDType : int32_t { kF32 = 0, kBF16 = 1, kF16 = 2, kF8E4M3 = 3, kI8 = 4 };

// A row-major weight [n_rows, n_cols] (tensor/matrix.h's Matrix in kRowMajor layout):
// F8E4M3 scales [ceil(n_rows / 128), ceil(n_cols / 128)]; I8 scales [n_rows].
struct DevMatrix {
  int32_t dtype = kF32;
  int64_t n_rows = 0, n_cols = 0;
  const void* data = nullptr;
  const float* scales = nullptr;
};

struct DevVector {  // F32 | BF16 | F16 values [n]
  int32_t dtype = kF32;
  int64_t n = 0;
  const void* data = nullptr;
};

// The paged MLA cache of one layer (kv/kv_cache.h's layout) and how a sequence's positions map
// to its slots: slot(p) = page_table[seq * max_pages + p / page_size] * page_size + p % page_size.
struct DevKvLayer {
  int32_t dtype = kF32;  // latent storage: kF32 | kBF16 | kF8E4M3
  int32_t d_latent = 0, d_rope = 0, d_index = 0, page_size = 0;
  int64_t latent_row_bytes = 0;
  uint8_t* latent = nullptr;      // [n_slots, latent_row_bytes]
  uint8_t* index_keys = nullptr;  // [n_pages, d_index, page_size] e4m3 (V3.2)
  float* index_scales = nullptr;  // [n_slots] (V3.2)
};

struct DevBatch {  // the step's ForwardBatch arrays, uploaded (CudaScratch::stage_batch)
  const int32_t* positions = nullptr;   // [n_tokens]
  const int32_t* page_table = nullptr;  // [n_seqs, max_pages]
  int32_t max_pages = 0;
};

// y[T, w.n_rows] = x[T, w.n_cols] W^T (float32 accumulation, weights dequantised in registers).
const char* linear(const DevMatrix& w, const float* x, int64_t n_tok, float* y, void* stream);
// h[i, :] = table row ids[i] - row_begin, zeros where that row is outside the table.
const char* embed(const DevMatrix& table, const int32_t* ids, int64_t n, int64_t row_begin,
                  float* h, void* stream);
// y[i, :width] = x[i, :width] / sqrt(mean(x^2) + eps) * w (y may alias x).
const char* rmsnorm_rows(const float* x, const DevVector& w, int64_t n_rows, int64_t width,
                         float eps, float* y, void* stream);
const char* add_rows(const float* x, int64_t n, float* y, void* stream);  // y += x
// y[i] = silu(gate[i]) * up[i] (y may alias either).
const char* silu_mul(const float* gate, const float* up, int64_t n, float* y, void* stream);
// x quantised per token per 128 values to e4m3 codes [T, K] and float32 scales [T, ceil(K/128)]
// (s = amax / 448, or its next power of two with ue8m0): DeepSeek's act_quant.
const char* act_quant(const float* x, int64_t n_tok, int64_t k, bool ue8m0, uint8_t* codes,
                      float* scales, void* stream);
// y[t, c] = e4m3(codes[t, c]) * scales[t, c / 128]: act_quant's values back in float32.
const char* act_dequant(const uint8_t* codes, const float* scales, int64_t n_tok, int64_t k,
                        float* y, void* stream);

// backend.h MlaRopeArgs, token by token (one block per token).
struct MlaRopeDev {
  int32_t n_heads = 0, d_nope = 0, d_rope = 0, kv_lora_rank = 0, n_tok = 0, d_row = 0;
  const int32_t* positions = nullptr;
  const float* rope_freqs = nullptr;  // [d_rope / 2]
  const float* kv_a = nullptr;        // [T, kv_lora_rank + d_rope]
  DevVector kv_a_norm;
  float eps = 1e-6f;
  bool fp8_latent = false;
  float* q = nullptr;     // [T, n_heads, d_nope + d_rope]
  float* rows = nullptr;  // [T, d_row]
};
const char* mla_rope_rows(const MlaRopeDev& a, void* stream);

// backend.h IndexerRopeArgs (head_dim a power of two <= 256).
struct IndexerRopeDev {
  int32_t n_tok = 0, n_heads = 0, head_dim = 0, d_rope = 0, d_row = 0, key_offset = 0;
  const int32_t* positions = nullptr;
  const float* rope_freqs = nullptr;
  const float* k_norm_w = nullptr;
  const float* k_norm_b = nullptr;
  float* k = nullptr;
  float* q = nullptr;
  float* coef = nullptr;
  float* rows = nullptr;
};
const char* indexer_rope_quant(const IndexerRopeDev& a, void* stream);

// KvCache::store of n f32 rows [n, d_row] at slots[0, n) of one layer.
const char* kv_store_rows(const DevKvLayer& kv, const int32_t* slots, const float* rows, int32_t n,
                          int32_t d_row, void* stream);

// Absorbed MLA over the paged latent cache (FlashMLA's decode form, used for prefill chunks too):
// per query token and head, q_lat = W_UK^T q_nope, scores over the attended cached rows
// (q_lat . latent + q_rope . k_rope) * softmax_scale, o_lat = softmax-weighted latents,
// attn = W_UV o_lat. A token at position p attends to its sequence's positions [0, p] or, where
// n_sel[token] >= 0 (the V3.2 indexer's choice), to sel[token, 0:n_sel[token]].
inline constexpr int32_t kMaxListed = 16;  // backend.h kMlaAbsorbChunk
inline constexpr int32_t kMaxParts = 32;
struct MlaAttendDev {
  int32_t n_heads = 0, d_nope = 0, d_rope = 0, d_v = 0, kv_lora_rank = 0;
  float softmax_scale = 1.0f;
  // The query tokens: n_listed > 0: tok[j], seq[j] for j < n_listed (a decode chunk);
  // otherwise tokens tok_begin + j of sequence seq_fixed for j < n_range (a prefill chunk).
  int32_t n_listed = 0, tok[kMaxListed] = {}, seq[kMaxListed] = {};
  int32_t n_range = 0, tok_begin = 0, seq_fixed = 0;
  DevMatrix w_uk_t;  // [n_heads * kv_lora_rank, d_nope]
  DevMatrix kv_b;    // [n_heads * (d_nope + d_v), kv_lora_rank]
  DevKvLayer kv;
  DevBatch batch;
  const int32_t* sel = nullptr;    // [max_tokens, topk] or null (dense)
  const int32_t* n_sel = nullptr;  // [max_tokens]
  int32_t topk = 0;
  const float* q = nullptr;  // [T, n_heads, d_nope + d_rope]
  float* q_lat = nullptr;    // scratch [n, n_heads, kv_lora_rank]
  float* o_lat = nullptr;    // scratch [n, n_heads, kv_lora_rank]
  // Split-K: token j's n_att attended rows cut into min(n_parts, ceil(n_att / 256)) equal
  // ranges, one block per (head, token, part); the parts' softmax maxima, sums and unnormalised
  // outputs, merged in order.
  int32_t n_parts = 1;       // the launch's most, <= kMaxParts
  float* part_ml = nullptr;  // scratch [n, n_heads, n_parts, 2]
  float* part_o = nullptr;   // scratch [n, n_heads, n_parts, kv_lora_rank]
  float* attn = nullptr;     // out [T, n_heads, d_v]
};
const char* mla_attend(const MlaAttendDev& a, void* stream);

// V3.2 indexer scores of tokens [t_begin, t_begin + n_tok) of sequence seq over positions
// [0, pos(t)] into scores[(t - t_begin) * ld + p] (positions after pos(t) untouched):
// I(t, p) = scale_k(p) * sum_h coef[t, h] * relu(q[t, h, :] . k(p)).
struct IndexerScoreDev {
  int32_t n_heads = 0, head_dim = 0;
  int32_t t_begin = 0, n_tok = 0, seq = 0, max_pos = 0;  // max_pos: the largest pos(t) + 1
  DevKvLayer kv;
  DevBatch batch;
  const float* q = nullptr;     // [T, n_heads, head_dim] e4m3 values
  const float* coef = nullptr;  // [T, n_heads]
  float* scores = nullptr;
  int64_t ld = 0;
};
const char* indexer_scores(const IndexerScoreDev& a, void* stream);

// MoE: xe[i, :] = x[rows[i], :] (n rows of width d); out[rows[i], :] += w[i] * ye[i, :] (rows
// distinct within one call, so no two threads add to one element).
const char* gather_rows(const float* x, const int32_t* rows, int64_t n, int64_t d, float* xe,
                        void* stream);
const char* scatter_add_rows(const float* ye, const int32_t* rows, const float* w, int64_t n,
                             int64_t d, float* out, void* stream);

}  // namespace dss::cuda::dev
