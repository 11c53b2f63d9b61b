// Kernels of kernels/cuda/ops_device.h. Correctness first: each kernel is the direct form of its
// contract (one warp per weight row, one block per token or per (token, head)); tests/cuda
// compares each with the CPU backend and the benchmarks report what they reach.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>

#include "kernels/cuda/e4m3.cuh"
#include "kernels/cuda/ops_device.h"

namespace dss::cuda::dev {
namespace {

constexpr int kBlock = 256;

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
const char* launched() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}
unsigned blocks_for(int64_t n, int per = kBlock) {
  return static_cast<unsigned>((n + per - 1) / per);
}

// 2^ceil(log2(max(amax, 1e-4) / 448)) (tensor/ue8m0_quant.h).
__device__ inline float ue8m0_scale(float amax) {
  const float s_raw = fmaxf(amax, 1e-4f) * (1.0f / 448.0f);
  int e = 0;
  const float m = frexpf(s_raw, &e);
  return m == 0.5f ? ldexpf(1.0f, e - 1) : ldexpf(1.0f, e);
}

__device__ inline float w_at(const DevMatrix& w, int64_t r, int64_t c) {
  const int64_t i = r * w.n_cols + c;
  switch (w.dtype) {
    case kBF16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(w.data)[i]);
    case kF16:
      return __half2float(static_cast<const __half*>(w.data)[i]);
    case kF8E4M3:
      return e4m3_value(static_cast<const uint8_t*>(w.data)[i]) *
             w.scales[(r / 128) * ((w.n_cols + 127) / 128) + c / 128];
    case kI8:
      return static_cast<float>(static_cast<const int8_t*>(w.data)[i]) * w.scales[r];
    default:
      return static_cast<const float*>(w.data)[i];
  }
}

__device__ inline float v_at(const DevVector& v, int64_t i) {
  switch (v.dtype) {
    case kBF16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(v.data)[i]);
    case kF16:
      return __half2float(static_cast<const __half*>(v.data)[i]);
    default:
      return static_cast<const float*>(v.data)[i];
  }
}

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ inline double warp_sum_d(double v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum / max over the block (blockDim.x a multiple of 32); every thread gets the result. `red`:
// shared [32].
template <typename T, typename Op>
__device__ T block_reduce(T v, T* red, Op op, T identity) {
  v = op(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n_warps = blockDim.x / 32;
  __syncthreads();  // red may still be read by a previous reduction
  if (lane == 0) red[warp] = v;
  __syncthreads();
  T t = lane < n_warps ? red[lane] : identity;
  return op(t);
}
__device__ float block_sum(float v, float* red) {
  return block_reduce(
      v, red, [](float x) { return warp_sum(x); }, 0.0f);
}
__device__ float block_max(float v, float* red) {
  return block_reduce(
      v, red, [](float x) { return warp_max(x); }, 0.0f);
}
__device__ double block_sum_d(double v, double* red) {
  return block_reduce(
      v, red, [](double x) { return warp_sum_d(x); }, 0.0);
}

// ---- linear: one warp per weight row and up to kLinTok tokens ----
constexpr int kLinTok = 8, kLinWarps = 8;

// Four consecutive weights of row r from column c (c % 4 == 0, the row 4-element aligned: one
// 4-, 8- or 16-byte load), dequantised; FP8's four share one 128-column scale block.
__device__ inline void w_at4(const DevMatrix& w, int64_t r, int64_t c, float v[4]) {
  const int64_t i = r * w.n_cols + c;
  switch (w.dtype) {
    case kBF16:
    case kF16: {
      const uint2 q = *reinterpret_cast<const uint2*>(static_cast<const uint16_t*>(w.data) + i);
      const uint16_t h[4] = {static_cast<uint16_t>(q.x), static_cast<uint16_t>(q.x >> 16),
                             static_cast<uint16_t>(q.y), static_cast<uint16_t>(q.y >> 16)};
      for (int k = 0; k < 4; ++k) {
        if (w.dtype == kBF16) {
          v[k] = __uint_as_float(static_cast<uint32_t>(h[k]) << 16);
        } else {
          v[k] = __half2float(__ushort_as_half(h[k]));
        }
      }
      return;
    }
    case kF8E4M3:
    case kI8: {
      const uint32_t q =
          *reinterpret_cast<const uint32_t*>(static_cast<const uint8_t*>(w.data) + i);
      const float s =
          w.dtype == kI8 ? w.scales[r] : w.scales[(r / 128) * ((w.n_cols + 127) / 128) + c / 128];
      for (int k = 0; k < 4; ++k) {
        const auto b = static_cast<uint8_t>(q >> (8 * k));
        v[k] = (w.dtype == kI8 ? static_cast<float>(static_cast<int8_t>(b)) : e4m3_value(b)) * s;
      }
      return;
    }
    default: {
      const float4 q = *reinterpret_cast<const float4*>(static_cast<const float*>(w.data) + i);
      v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    }
  }
}

// kVec: K % 4 == 0 and W, x 16-byte aligned, so each lane reads 4 consecutive columns per
// iteration (a warp 128 columns: for FP8 one scale block) with vector loads; else one column.
template <bool kVec>
__global__ void linear_kernel(DevMatrix w, const float* __restrict__ x, int64_t n_tok,
                              float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kLinWarps + threadIdx.x / 32;
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kLinTok;
  if (r >= w.n_rows) return;  // the whole warp
  const int64_t nt = min(static_cast<int64_t>(kLinTok), n_tok - t0);
  const int64_t K = w.n_cols;
  float acc[kLinTok] = {};
  if (kVec) {
    for (int64_t c = 4 * lane; c < K; c += 128) {
      float wv[4];
      w_at4(w, r, c, wv);
#pragma unroll
      for (int j = 0; j < kLinTok; ++j) {
        if (j < nt) {
          const float4 xv = *reinterpret_cast<const float4*>(x + (t0 + j) * K + c);
          acc[j] += wv[0] * xv.x + wv[1] * xv.y + wv[2] * xv.z + wv[3] * xv.w;
        }
      }
    }
  } else {
    for (int64_t c = lane; c < K; c += 32) {
      const float wv = w_at(w, r, c);
#pragma unroll
      for (int j = 0; j < kLinTok; ++j)
        if (j < nt) acc[j] += wv * x[(t0 + j) * K + c];
    }
  }
#pragma unroll
  for (int j = 0; j < kLinTok; ++j) {
    const float v = warp_sum(acc[j]);
    if (lane == 0 && j < nt) y[(t0 + j) * w.n_rows + r] = v;
  }
}

__global__ void embed_kernel(DevMatrix table, const int32_t* ids, int64_t row_begin, float* h) {
  const int64_t i = blockIdx.x, d = table.n_cols;
  const int64_t row = static_cast<int64_t>(ids[i]) - row_begin;
  const bool in = row >= 0 && row < table.n_rows;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) h[i * d + c] = in ? w_at(table, row, c) : 0;
}

// y[:width] = x[:width] / sqrt(mean(x^2) + eps) * w by the whole block (y may alias x).
__device__ void rmsnorm_row(const float* x, const DevVector& w, int64_t width, float eps, float* y,
                            float* red) {
  float ss = 0.0f;
  for (int64_t c = threadIdx.x; c < width; c += blockDim.x) ss += x[c] * x[c];
  const float inv = 1.0f / sqrtf(block_sum(ss, red) / static_cast<float>(width) + eps);
  for (int64_t c = threadIdx.x; c < width; c += blockDim.x) y[c] = x[c] * inv * v_at(w, c);
}

__global__ void rmsnorm_kernel(const float* x, DevVector w, int64_t width, float eps, float* y) {
  __shared__ float red[32];
  rmsnorm_row(x + blockIdx.x * width, w, width, eps, y + blockIdx.x * width, red);
}

__global__ void add_kernel(const float* x, int64_t n, float* y) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] += x[i];
}

__global__ void silu_mul_kernel(const float* g, const float* u, int64_t n, float* y) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float a = g[i];
    y[i] = a / (1.0f + expf(-a)) * u[i];
  }
}

// grid (T, ceil(K / 128)), block 128: one quantisation block each.
__global__ void act_quant_kernel(const float* x, int64_t k, bool ue8m0, uint8_t* codes,
                                 float* scales) {
  __shared__ float red[32];
  const int64_t t = blockIdx.x, c = blockIdx.y * 128 + threadIdx.x;
  const float v = c < k ? x[t * k + c] : 0.0f;
  const float amax = block_max(fabsf(v), red);
  const float s = ue8m0 ? ue8m0_scale(amax) : fmaxf(amax, 1e-4f) / 448.0f;
  if (c < k) codes[t * k + c] = e4m3_code(v / s);
  if (threadIdx.x == 0) scales[t * gridDim.y + blockIdx.y] = s;
}

__global__ void act_dequant_kernel(const uint8_t* codes, const float* scales, int64_t n_tok,
                                   int64_t k, float* y) {
  const int64_t kb = (k + 127) / 128;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n_tok * k;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / k, c = i % k;
    y[i] = e4m3_value(codes[i]) * scales[t * kb + c / 128];
  }
}

// ---- rope and the cache rows ----
constexpr int kMaxPairs = 128;  // d_rope <= 256

__device__ void rope_angles(const float* freqs, int n_pairs, int32_t pos, float* cs, float* sn) {
  for (int i = threadIdx.x; i < n_pairs; i += blockDim.x) {
    const float a = static_cast<float>(pos) * freqs[i];
    cs[i] = static_cast<float>(cos(static_cast<double>(a)));
    sn[i] = static_cast<float>(sin(static_cast<double>(a)));
  }
  __syncthreads();
}

__global__ void mla_rope_kernel(MlaRopeDev a) {
  __shared__ float red[32], cs[kMaxPairs], sn[kMaxPairs];
  const int t = blockIdx.x, R = a.kv_lora_rank, dr = a.d_rope, np = dr / 2;
  const int H = a.n_heads, d_qk = a.d_nope + dr;
  rope_angles(a.rope_freqs, np, a.positions[t], cs, sn);
  const float* kva = a.kv_a + static_cast<int64_t>(t) * (R + dr);
  float* row = a.rows + static_cast<int64_t>(t) * a.d_row;
  rmsnorm_row(kva, a.kv_a_norm, R, a.eps, row, red);
  if (a.fp8_latent) {  // V3.2's FP8 latent: e4m3 per 128 values (UE8M0 scale), then back
    for (int j = 0; j < R; j += 128) {
      __syncthreads();
      const int c = j + static_cast<int>(threadIdx.x);
      const bool mine = threadIdx.x < 128 && c < R;
      const float v = mine ? row[c] : 0.0f;
      const float s = ue8m0_scale(block_max(fabsf(v), red));
      if (mine) row[c] = e4m3_value(e4m3_code(v / s)) * s;
    }
  }
  for (int i = threadIdx.x; i < np; i += blockDim.x) {
    const float x0 = kva[R + 2 * i], x1 = kva[R + 2 * i + 1];
    row[R + 2 * i] = x0 * cs[i] - x1 * sn[i];
    row[R + 2 * i + 1] = x0 * sn[i] + x1 * cs[i];
  }
  for (int idx = threadIdx.x; idx < H * np; idx += blockDim.x) {
    const int h = idx / np, i = idx % np;
    float* qp = a.q + (static_cast<int64_t>(t) * H + h) * d_qk + a.d_nope;
    const float x0 = qp[2 * i], x1 = qp[2 * i + 1];
    qp[2 * i] = x0 * cs[i] - x1 * sn[i];
    qp[2 * i + 1] = x0 * sn[i] + x1 * cs[i];
  }
}

// buf[0, D): half-split rope of the first 2 np values, the Walsh-Hadamard transform scaled by
// D^-0.5, then UE8M0 e4m3 quantisation: buf = the codes' values, returns the scale.
__device__ float rope_hadamard_quant(float* buf, int D, int np, const float* cs, const float* sn,
                                     float* red) {
  for (int i = threadIdx.x; i < np; i += blockDim.x) {
    const float x0 = buf[i], x1 = buf[i + np];
    buf[i] = x0 * cs[i] - x1 * sn[i];
    buf[i + np] = x0 * sn[i] + x1 * cs[i];
  }
  __syncthreads();
  for (int h = 1; h < D; h *= 2) {
    for (int p = threadIdx.x; p < D / 2; p += blockDim.x) {
      const int i = (p / h) * 2 * h + p % h;
      const float x0 = buf[i], x1 = buf[i + h];
      buf[i] = x0 + x1;
      buf[i + h] = x0 - x1;
    }
    __syncthreads();
  }
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  float amax = 0.0f;
  for (int c = threadIdx.x; c < D; c += blockDim.x) {
    buf[c] *= scale;
    amax = fmaxf(amax, fabsf(buf[c]));
  }
  const float s = ue8m0_scale(block_max(amax, red));
  for (int c = threadIdx.x; c < D; c += blockDim.x) buf[c] = e4m3_value(e4m3_code(buf[c] / s));
  __syncthreads();
  return s;
}

constexpr int kMaxIndexDim = 256;

__global__ void indexer_rope_kernel(IndexerRopeDev a) {
  __shared__ float red[32], cs[kMaxPairs], sn[kMaxPairs], buf[kMaxIndexDim];
  __shared__ double red_d[32];
  const int t = blockIdx.x, D = a.head_dim, HI = a.n_heads, np = a.d_rope / 2;
  rope_angles(a.rope_freqs, np, a.positions[t], cs, sn);
  const float* k = a.k + static_cast<int64_t>(t) * D;
  double sum = 0.0;
  for (int c = threadIdx.x; c < D; c += blockDim.x) sum += k[c];
  const double mean = block_sum_d(sum, red_d) / D;
  double var = 0.0;
  for (int c = threadIdx.x; c < D; c += blockDim.x) var += (k[c] - mean) * (k[c] - mean);
  var = block_sum_d(var, red_d) / D;
  const auto inv = static_cast<float>(1.0 / sqrt(var + 1e-6));
  const auto mu = static_cast<float>(mean);
  for (int c = threadIdx.x; c < D; c += blockDim.x)
    buf[c] = (k[c] - mu) * inv * a.k_norm_w[c] + a.k_norm_b[c];
  __syncthreads();
  float* row = a.rows + static_cast<int64_t>(t) * a.d_row + a.key_offset;
  const float sk = rope_hadamard_quant(buf, D, np, cs, sn, red);
  for (int c = threadIdx.x; c < D; c += blockDim.x) row[c] = buf[c];
  if (threadIdx.x == 0) row[D] = sk;
  const float w_scale = 1.0f / sqrtf(static_cast<float>(HI));
  const float d_scale = 1.0f / sqrtf(static_cast<float>(D));
  for (int h = 0; h < HI; ++h) {
    float* q = a.q + (static_cast<int64_t>(t) * HI + h) * D;
    __syncthreads();
    for (int c = threadIdx.x; c < D; c += blockDim.x) buf[c] = q[c];
    __syncthreads();
    const float sq = rope_hadamard_quant(buf, D, np, cs, sn, red);
    for (int c = threadIdx.x; c < D; c += blockDim.x) q[c] = buf[c];
    if (threadIdx.x == 0) {
      float& coef = a.coef[static_cast<int64_t>(t) * HI + h];
      coef = coef * w_scale * sq * d_scale;
    }
  }
}

// One block per row: KvCache::store's encodings (kv/kv_cache.h).
__global__ void kv_store_kernel(DevKvLayer kv, const int32_t* slots, const float* rows,
                                int32_t d_row) {
  __shared__ float red[32];
  const int64_t slot = slots[blockIdx.x];
  const float* row = rows + static_cast<int64_t>(blockIdx.x) * d_row;
  const int R = kv.d_latent, dr = kv.d_rope;
  uint8_t* out = kv.latent + slot * kv.latent_row_bytes;
  if (kv.dtype == kF32) {
    for (int c = threadIdx.x; c < R + dr; c += blockDim.x)
      reinterpret_cast<float*>(out)[c] = row[c];
  } else if (kv.dtype == kBF16) {
    for (int c = threadIdx.x; c < R + dr; c += blockDim.x)
      reinterpret_cast<__nv_bfloat16*>(out)[c] = __float2bfloat16_rn(row[c]);
  } else {  // e4m3 latent per 128 values with power-of-two scales, bf16 rope
    const int n_blocks = (R + 127) / 128;
    for (int j = 0; j < n_blocks; ++j) {
      const int c = j * 128 + static_cast<int>(threadIdx.x);
      const bool mine = threadIdx.x < 128 && c < R;
      const float v = mine ? row[c] : 0.0f;
      const float s = ue8m0_scale(block_max(fabsf(v), red));
      if (mine) out[c] = e4m3_code(v / s);
      if (threadIdx.x == 0) memcpy(out + R + 4 * j, &s, 4);
    }
    uint8_t* rope = out + R + 4 * n_blocks;
    for (int c = threadIdx.x; c < dr; c += blockDim.x) {
      const __nv_bfloat16 b = __float2bfloat16_rn(row[R + c]);
      memcpy(rope + 2 * c, &b, 2);
    }
  }
  if (kv.d_index > 0) {  // values that are e4m3 already: stored exactly, pages transposed
    const int D = kv.d_index, P = kv.page_size;
    const float* key = row + R + dr;
    for (int d = threadIdx.x; d < D; d += blockDim.x)
      kv.index_keys[((slot / P) * D + d) * P + slot % P] = e4m3_code(key[d]);
    if (threadIdx.x == 0) kv.index_scales[slot] = key[D];
  }
}

// ---- MLA, absorbed ----
__device__ inline float latent_at(const DevKvLayer& kv, int64_t slot, int c) {
  const uint8_t* row = kv.latent + slot * kv.latent_row_bytes;
  if (kv.dtype == kF32) return reinterpret_cast<const float*>(row)[c];
  if (kv.dtype == kBF16) return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(row)[c]);
  const int R = kv.d_latent;
  if (c < R) {
    float s;
    memcpy(&s, row + R + 4 * (c / 128), 4);
    return e4m3_value(row[c]) * s;
  }
  __nv_bfloat16 b;
  memcpy(&b, row + R + 4 * ((R + 127) / 128) + 2 * (c - R), 2);
  return __bfloat162float(b);
}

__device__ inline void query_token(const MlaAttendDev& a, int j, int32_t* tok, int32_t* seq) {
  if (a.n_listed > 0) {
    *tok = a.tok[j];
    *seq = a.seq[j];
  } else {
    *tok = a.tok_begin + j;
    *seq = a.seq_fixed;
  }
}

__device__ inline int64_t slot_of(const DevBatch& b, const DevKvLayer& kv, int32_t seq, int32_t p) {
  const int32_t page = b.page_table[static_cast<int64_t>(seq) * b.max_pages + p / kv.page_size];
  return static_cast<int64_t>(page) * kv.page_size + p % kv.page_size;
}

// grid (ceil(R / kBlock), H, n): q_lat[j, h, r] = sum_d q_nope[tok, h, d] W_UK^T[h R + r, d].
__global__ void q_absorb_kernel(MlaAttendDev a) {
  const int R = a.kv_lora_rank, H = a.n_heads, h = blockIdx.y, j = blockIdx.z;
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  int32_t tok, seq;
  query_token(a, j, &tok, &seq);
  const float* qn = a.q + (static_cast<int64_t>(tok) * H + h) * (a.d_nope + a.d_rope);
  float acc = 0.0f;
  for (int d = 0; d < a.d_nope; ++d)
    acc += qn[d] * w_at(a.w_uk_t, static_cast<int64_t>(h) * R + r, d);
  a.q_lat[(static_cast<int64_t>(j) * H + h) * R + r] = acc;
}

constexpr int kAttWarps = 8, kAttMaxLatentPerThread = 4;  // kv_lora_rank <= 8 * 32 * 4 = 1024
constexpr int32_t kPartRows = 256;                        // backend.h kMlaDecodePart

// grid (H, n, n_parts), block kAttWarps * 32, dynamic shared (R + d_rope) floats: online softmax
// over the part's attended rows, kAttWarps rows at a time (one warp scores one row).
__global__ void attend_kernel(MlaAttendDev a) {
  extern __shared__ float qs[];  // [R | d_rope]: q_lat, then q_rope
  __shared__ float score[kAttWarps];
  __shared__ int64_t slot_sh[kAttWarps];
  const int R = a.kv_lora_rank, dr = a.d_rope, H = a.n_heads, h = blockIdx.x, j = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int32_t tok, seq;
  query_token(a, j, &tok, &seq);
  const float* ql = a.q_lat + (static_cast<int64_t>(j) * H + h) * R;
  const float* qr = a.q + (static_cast<int64_t>(tok) * H + h) * (a.d_nope + dr) + a.d_nope;
  for (int c = threadIdx.x; c < R + dr; c += blockDim.x) qs[c] = c < R ? ql[c] : qr[c - R];
  const int32_t pos = a.batch.positions[tok];
  const bool sparse = a.sel != nullptr && a.n_sel[tok] >= 0;
  const int32_t n_att = sparse ? a.n_sel[tok] : pos + 1;
  const int32_t* sel = sparse ? a.sel + static_cast<int64_t>(tok) * a.topk : nullptr;
  // This token's parts: ceil(n_att / kPartRows), at most the launch's n_parts - a function of
  // the token alone, so its result does not depend on the other tokens of the launch.
  const int32_t n_parts = max(1, min(a.n_parts, (n_att + kPartRows - 1) / kPartRows));
  const int32_t part_len = (n_att + n_parts - 1) / n_parts;
  const int32_t i_begin = min(n_att, static_cast<int32_t>(blockIdx.z) * part_len);
  const int32_t i_end = blockIdx.z < n_parts ? min(n_att, i_begin + part_len) : i_begin;
  float acc[kAttMaxLatentPerThread] = {};
  float m = -INFINITY, l = 0.0f;
  __syncthreads();
  for (int32_t base = i_begin; base < i_end; base += kAttWarps) {
    const int32_t i = base + warp;
    if (i < i_end) {
      const int64_t slot = slot_of(a.batch, a.kv, seq, sparse ? sel[i] : i);
      float dot = 0.0f;
      for (int c = lane; c < R + dr; c += 32) dot += qs[c] * latent_at(a.kv, slot, c);
      dot = warp_sum(dot);
      if (lane == 0) {
        score[warp] = dot * a.softmax_scale;
        slot_sh[warp] = slot;
      }
    }
    __syncthreads();
    const int n_here = min(kAttWarps, i_end - base);
    float m_new = m;
    for (int k = 0; k < n_here; ++k) m_new = fmaxf(m_new, score[k]);
    const float corr = expf(m - m_new);
    l *= corr;
    for (int v = 0; v < kAttMaxLatentPerThread; ++v) acc[v] *= corr;
    for (int k = 0; k < n_here; ++k) {
      const float p = expf(score[k] - m_new);
      l += p;
      for (int v = 0; v < kAttMaxLatentPerThread; ++v) {
        const int c = threadIdx.x + v * blockDim.x;
        if (c < R) acc[v] += p * latent_at(a.kv, slot_sh[k], c);
      }
    }
    m = m_new;
    __syncthreads();
  }
  const int64_t part = (static_cast<int64_t>(j) * H + h) * a.n_parts + blockIdx.z;
  float* po = a.part_o + part * R;
  for (int v = 0; v < kAttMaxLatentPerThread; ++v) {
    const int c = threadIdx.x + v * blockDim.x;
    if (c < R) po[c] = acc[v];
  }
  if (threadIdx.x == 0) {
    a.part_ml[2 * part] = m;  // -inf for an empty part
    a.part_ml[2 * part + 1] = l;
  }
}

// grid (H, n): o_lat = sum_p e^(m_p - M) o_p / sum_p e^(m_p - M) l_p, parts in order.
__global__ void combine_kernel(MlaAttendDev a) {
  const int R = a.kv_lora_rank, H = a.n_heads, h = blockIdx.x, j = blockIdx.y, P = a.n_parts;
  const int64_t first = (static_cast<int64_t>(j) * H + h) * P;
  float M = -INFINITY;
  for (int p = 0; p < P; ++p) M = fmaxf(M, a.part_ml[2 * (first + p)]);
  float L = 0.0f;
  for (int p = 0; p < P; ++p) {
    const float mp = a.part_ml[2 * (first + p)];
    if (mp != -INFINITY) L += expf(mp - M) * a.part_ml[2 * (first + p) + 1];
  }
  float* ol = a.o_lat + (static_cast<int64_t>(j) * H + h) * R;
  for (int c = threadIdx.x; c < R; c += blockDim.x) {
    float o = 0.0f;
    for (int p = 0; p < P; ++p) {
      const float mp = a.part_ml[2 * (first + p)];
      if (mp != -INFINITY) o += expf(mp - M) * a.part_o[(first + p) * R + c];
    }
    ol[c] = o / L;
  }
}

// grid (ceil(d_v / kBlock), H, n): attn[tok, h, v] = sum_r W_UV[h][v, r] o_lat[j, h, r].
__global__ void out_v_kernel(MlaAttendDev a) {
  const int R = a.kv_lora_rank, H = a.n_heads, h = blockIdx.y, j = blockIdx.z;
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= a.d_v) return;
  int32_t tok, seq;
  query_token(a, j, &tok, &seq);
  const float* ol = a.o_lat + (static_cast<int64_t>(j) * H + h) * R;
  const int64_t w_row = static_cast<int64_t>(h) * (a.d_nope + a.d_v) + a.d_nope + v;
  float acc = 0.0f;
  for (int r = 0; r < R; ++r) acc += w_at(a.kv_b, w_row, r) * ol[r];
  a.attn[(static_cast<int64_t>(tok) * H + h) * a.d_v + v] = acc;
}

// ---- V3.2 indexer scores: grid (ceil(max_pos / kBlock), n_tok), one position per thread ----
constexpr int kIdxHeadGroup = 16;

__global__ void indexer_score_kernel(IndexerScoreDev a) {
  extern __shared__ float qc[];  // [n_heads * head_dim | n_heads]
  const int HI = a.n_heads, D = a.head_dim;
  const int32_t t = a.t_begin + static_cast<int32_t>(blockIdx.y);
  for (int i = threadIdx.x; i < HI * D; i += blockDim.x)
    qc[i] = a.q[static_cast<int64_t>(t) * HI * D + i];
  for (int i = threadIdx.x; i < HI; i += blockDim.x)
    qc[HI * D + i] = a.coef[static_cast<int64_t>(t) * HI + i];
  __syncthreads();
  const int32_t p = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
  const int32_t pos = a.batch.positions[t];
  if (p > pos) return;
  const int64_t slot = slot_of(a.batch, a.kv, a.seq, p);
  const int64_t P = a.kv.page_size;
  const uint8_t* key = a.kv.index_keys + (slot / P) * D * P + slot % P;  // value d at d * P
  float total = 0.0f;
  for (int h0 = 0; h0 < HI; h0 += kIdxHeadGroup) {
    float dot[kIdxHeadGroup] = {};
    for (int d = 0; d < D; ++d) {
      const float kd = e4m3_value(key[static_cast<int64_t>(d) * P]);
#pragma unroll
      for (int g = 0; g < kIdxHeadGroup; ++g)
        if (h0 + g < HI) dot[g] += qc[(h0 + g) * D + d] * kd;
    }
    for (int g = 0; g < kIdxHeadGroup && h0 + g < HI; ++g)
      total += qc[HI * D + h0 + g] * fmaxf(dot[g], 0.0f);
  }
  a.scores[static_cast<int64_t>(blockIdx.y) * a.ld + p] = a.kv.index_scales[slot] * total;
}

__global__ void gather_kernel(const float* x, const int32_t* rows, int64_t d, float* xe) {
  const int64_t i = blockIdx.x, r = rows[i];
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) xe[i * d + c] = x[r * d + c];
}

__global__ void scatter_add_kernel(const float* ye, const int32_t* rows, const float* w, int64_t d,
                                   float* out) {
  const int64_t i = blockIdx.x, r = rows[i];
  const float wi = w[i];
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) out[r * d + c] += wi * ye[i * d + c];
}

}  // namespace

const char* linear(const DevMatrix& w, const float* x, int64_t n_tok, float* y, void* stream) {
  if (n_tok <= 0 || w.n_rows <= 0) return nullptr;
  const dim3 grid(blocks_for(w.n_rows, kLinWarps), blocks_for(n_tok, kLinTok));
  const bool vec = w.n_cols % 4 == 0 && reinterpret_cast<uintptr_t>(w.data) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(x) % 16 == 0;
  if (vec) {
    linear_kernel<true><<<grid, kLinWarps * 32, 0, as_stream(stream)>>>(w, x, n_tok, y);
  } else {
    linear_kernel<false><<<grid, kLinWarps * 32, 0, as_stream(stream)>>>(w, x, n_tok, y);
  }
  return launched();
}

const char* embed(const DevMatrix& table, const int32_t* ids, int64_t n, int64_t row_begin,
                  float* h, void* stream) {
  if (n <= 0) return nullptr;
  embed_kernel<<<static_cast<unsigned>(n), kBlock, 0, as_stream(stream)>>>(table, ids, row_begin,
                                                                           h);
  return launched();
}

const char* rmsnorm_rows(const float* x, const DevVector& w, int64_t n_rows, int64_t width,
                         float eps, float* y, void* stream) {
  if (n_rows <= 0) return nullptr;
  rmsnorm_kernel<<<static_cast<unsigned>(n_rows), kBlock, 0, as_stream(stream)>>>(x, w, width, eps,
                                                                                  y);
  return launched();
}

const char* add_rows(const float* x, int64_t n, float* y, void* stream) {
  if (n <= 0) return nullptr;
  add_kernel<<<min(blocks_for(n), 4096u), kBlock, 0, as_stream(stream)>>>(x, n, y);
  return launched();
}

const char* silu_mul(const float* gate, const float* up, int64_t n, float* y, void* stream) {
  if (n <= 0) return nullptr;
  silu_mul_kernel<<<min(blocks_for(n), 4096u), kBlock, 0, as_stream(stream)>>>(gate, up, n, y);
  return launched();
}

const char* act_quant(const float* x, int64_t n_tok, int64_t k, bool ue8m0, uint8_t* codes,
                      float* scales, void* stream) {
  if (n_tok <= 0) return nullptr;
  const dim3 grid(static_cast<unsigned>(n_tok), blocks_for(k, 128));
  act_quant_kernel<<<grid, 128, 0, as_stream(stream)>>>(x, k, ue8m0, codes, scales);
  return launched();
}

const char* act_dequant(const uint8_t* codes, const float* scales, int64_t n_tok, int64_t k,
                        float* y, void* stream) {
  if (n_tok <= 0) return nullptr;
  act_dequant_kernel<<<min(blocks_for(n_tok * k), 4096u), kBlock, 0, as_stream(stream)>>>(
      codes, scales, n_tok, k, y);
  return launched();
}

const char* mla_rope_rows(const MlaRopeDev& a, void* stream) {
  if (a.n_tok <= 0) return nullptr;
  if (a.d_rope / 2 > kMaxPairs) return "mla_rope_rows: d_rope > 256";
  mla_rope_kernel<<<static_cast<unsigned>(a.n_tok), kBlock, 0, as_stream(stream)>>>(a);
  return launched();
}

const char* indexer_rope_quant(const IndexerRopeDev& a, void* stream) {
  if (a.n_tok <= 0) return nullptr;
  if (a.head_dim > kMaxIndexDim || (a.head_dim & (a.head_dim - 1)) != 0 || a.d_rope / 2 > kMaxPairs)
    return "indexer_rope_quant: index_head_dim must be a power of two <= 256";
  indexer_rope_kernel<<<static_cast<unsigned>(a.n_tok), 128, 0, as_stream(stream)>>>(a);
  return launched();
}

const char* kv_store_rows(const DevKvLayer& kv, const int32_t* slots, const float* rows, int32_t n,
                          int32_t d_row, void* stream) {
  if (n <= 0) return nullptr;
  kv_store_kernel<<<static_cast<unsigned>(n), kBlock, 0, as_stream(stream)>>>(kv, slots, rows,
                                                                              d_row);
  return launched();
}

const char* mla_attend(const MlaAttendDev& a, void* stream) {
  const int n = a.n_listed > 0 ? a.n_listed : a.n_range;
  if (n <= 0) return nullptr;
  if (a.kv_lora_rank > kAttWarps * 32 * kAttMaxLatentPerThread)
    return "mla_attend: kv_lora_rank > 1024";
  const cudaStream_t s = as_stream(stream);
  const auto H = static_cast<unsigned>(a.n_heads), N = static_cast<unsigned>(n);
  q_absorb_kernel<<<dim3(blocks_for(a.kv_lora_rank), H, N), kBlock, 0, s>>>(a);
  const size_t shared = sizeof(float) * static_cast<size_t>(a.kv_lora_rank + a.d_rope);
  if (a.n_parts < 1 || a.n_parts > kMaxParts) return "mla_attend: n_parts out of range";
  attend_kernel<<<dim3(H, N, static_cast<unsigned>(a.n_parts)), kAttWarps * 32, shared, s>>>(a);
  combine_kernel<<<dim3(H, N), kBlock, 0, s>>>(a);
  out_v_kernel<<<dim3(blocks_for(a.d_v), H, N), kBlock, 0, s>>>(a);
  return launched();
}

const char* indexer_scores(const IndexerScoreDev& a, void* stream) {
  if (a.n_tok <= 0 || a.max_pos <= 0) return nullptr;
  const size_t shared = sizeof(float) * static_cast<size_t>(a.n_heads * (a.head_dim + 1));
  if (shared > 48 * 1024) return "indexer_scores: index_n_heads x index_head_dim > 12,000";
  const dim3 grid(blocks_for(a.max_pos), static_cast<unsigned>(a.n_tok));
  indexer_score_kernel<<<grid, kBlock, shared, as_stream(stream)>>>(a);
  return launched();
}

const char* gather_rows(const float* x, const int32_t* rows, int64_t n, int64_t d, float* xe,
                        void* stream) {
  if (n <= 0) return nullptr;
  gather_kernel<<<static_cast<unsigned>(n), kBlock, 0, as_stream(stream)>>>(x, rows, d, xe);
  return launched();
}

const char* scatter_add_rows(const float* ye, const int32_t* rows, const float* w, int64_t n,
                             int64_t d, float* out, void* stream) {
  if (n <= 0) return nullptr;
  scatter_add_kernel<<<static_cast<unsigned>(n), kBlock, 0, as_stream(stream)>>>(ye, rows, w, d,
                                                                                 out);
  return launched();
}

}  // namespace dss::cuda::dev
