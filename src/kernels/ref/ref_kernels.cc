#include "kernels/ref/ref_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

namespace dss::ref {

void matmul(const Matrix& w, const float* x, int64_t n_tok, float* y) {
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < w.n_rows; ++r) {
      double acc = 0.0;
      for (int64_t c = 0; c < w.n_cols; ++c)
        acc += static_cast<double>(w.at(r, c)) * x[t * w.n_cols + c];
      y[t * w.n_rows + r] = static_cast<float>(acc);
    }
  }
}

void rmsnorm(const float* x, const Vector& w, int64_t n, float eps, float* y) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv * w.at(i);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    y[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  const float m = *std::max_element(x, x + n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - m);
  for (int64_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(std::exp(static_cast<double>(x[i]) - m) / sum);
}

void rope_interleaved(float* x, int64_t d, const float* cos, const float* sin) {
  for (int64_t i = 0; i < d / 2; ++i) {
    const float a = x[2 * i], b = x[2 * i + 1];
    x[2 * i] = a * cos[i] - b * sin[i];
    x[2 * i + 1] = a * sin[i] + b * cos[i];
  }
}

double dot(const float* a, const float* b, int64_t n) {
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(a[i]) * b[i];
  return acc;
}

void act_quant_fp8(const float* x, int64_t n_tok, int64_t n_cols, bool ue8m0, float* y) {
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t c0 = 0; c0 < n_cols; c0 += 128) {
      const int64_t c1 = std::min(n_cols, c0 + 128);
      float amax = 1e-4f;
      for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(x[t * n_cols + c]));
      float s = amax / 448.0f;
      if (ue8m0) {
        s = amax * (1.0f / 448.0f);
        float p = 1.0f;  // smallest power of two >= s, by doubling / halving (exact)
        while (p < s) p *= 2.0f;
        while (p / 2.0f >= s) p /= 2.0f;
        s = p;
      }
      for (int64_t c = c0; c < c1; ++c) {
        const float v = std::clamp(x[t * n_cols + c] / s, -448.0f, 448.0f);
        y[t * n_cols + c] = fp8e4m3_to_f32(f32_to_fp8e4m3(v)) * s;
      }
    }
  }
}

void mla_load_row(const cpu::MlaCacheView& kv, int32_t pos, float* lat, float* pe) {
  const uint8_t* r = kv.row(pos);
  const int32_t R = kv.d_latent, dr = kv.d_rope;
  auto bf16_at = [](const uint8_t* p, int32_t i) {
    uint16_t v;
    std::memcpy(&v, p + 2 * i, 2);
    return bf16_to_f32(v);
  };
  if (kv.dtype == DType::kF32) {
    std::memcpy(lat, r, 4 * static_cast<size_t>(R));
    std::memcpy(pe, r + 4 * R, 4 * static_cast<size_t>(dr));
  } else if (kv.dtype == DType::kBF16) {
    for (int32_t i = 0; i < R; ++i) lat[i] = bf16_at(r, i);
    for (int32_t i = 0; i < dr; ++i) pe[i] = bf16_at(r + 2 * R, i);
  } else {
    const int32_t nb = (R + 127) / 128;
    for (int32_t i = 0; i < R; ++i) {
      float s;
      std::memcpy(&s, r + R + 4 * (i / 128), 4);
      lat[i] = fp8e4m3_to_f32(r[i]) * s;
    }
    for (int32_t i = 0; i < dr; ++i) pe[i] = bf16_at(r + R + 4 * nb, i);
  }
}

void mla_attn(const cpu::MlaCacheView& kv, const int32_t* pos, int64_t n, const float* q_lat,
              const float* q_pe, int32_t n_heads, float scale, float* out) {
  const int32_t R = kv.d_latent, dr = kv.d_rope;
  std::vector<float> lat(static_cast<size_t>(n) * R), pe(static_cast<size_t>(n) * dr);
  for (int64_t i = 0; i < n; ++i) {
    mla_load_row(kv, pos ? pos[i] : static_cast<int32_t>(i), lat.data() + i * R,
                 pe.data() + i * dr);
  }
  std::vector<double> s(static_cast<size_t>(n));
  for (int32_t h = 0; h < n_heads; ++h) {
    double mx = -1e300;
    for (int64_t i = 0; i < n; ++i) {
      double d = 0.0;
      for (int32_t c = 0; c < R; ++c) d += static_cast<double>(q_lat[h * R + c]) * lat[i * R + c];
      for (int32_t c = 0; c < dr; ++c) d += static_cast<double>(q_pe[h * dr + c]) * pe[i * dr + c];
      s[static_cast<size_t>(i)] = scale * d;
      mx = std::max(mx, s[static_cast<size_t>(i)]);
    }
    double sum = 0.0;
    for (auto& v : s) sum += (v = std::exp(v - mx));
    for (int32_t c = 0; c < R; ++c) {
      double acc = 0.0;
      for (int64_t i = 0; i < n; ++i) acc += s[static_cast<size_t>(i)] * lat[i * R + c];
      out[h * R + c] = static_cast<float>(acc / sum);
    }
  }
}

void attention(const float* q, const float* k, int64_t ldk, int64_t d_qk, const float* v,
               int64_t ldv, int64_t d_v, const int32_t* pos, int64_t n, float scale, float* out) {
  std::vector<double> s(static_cast<size_t>(n));
  double mx = -1e300;
  for (int64_t i = 0; i < n; ++i) {
    s[static_cast<size_t>(i)] = scale * dot(q, k + pos[i] * ldk, d_qk);
    mx = std::max(mx, s[static_cast<size_t>(i)]);
  }
  double sum = 0.0;
  for (auto& x : s) sum += (x = std::exp(x - mx));
  for (int64_t e = 0; e < d_v; ++e) {
    double acc = 0.0;
    for (int64_t i = 0; i < n; ++i) acc += s[static_cast<size_t>(i)] * v[pos[i] * ldv + e];
    out[e] = static_cast<float>(acc / sum);
  }
}

void index_scores(const uint8_t* keys_t, int64_t ld, const float* key_scales, int64_t n,
                  const float* q, const float* coef, int32_t HI, int32_t D, float* scores) {
  for (int64_t i = 0; i < n; ++i) {
    double s = 0.0;
    for (int32_t h = 0; h < HI; ++h) {
      double dot = 0.0;
      for (int32_t d = 0; d < D; ++d)
        dot += static_cast<double>(q[h * D + d]) * fp8e4m3_to_f32(keys_t[d * ld + i]);
      s += static_cast<double>(coef[h]) * std::max(0.0, dot);
    }
    scores[i] = static_cast<float>(key_scales[i] * s);
  }
}

void top_k_indices(const float* scores, int64_t n, int64_t k, int32_t* out) {
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t x, int32_t y) {
    return scores[x] > scores[y] || (scores[x] == scores[y] && x < y);
  });
  std::copy(order.begin(), order.begin() + k, out);
  std::sort(out, out + k);
}

}  // namespace dss::ref
