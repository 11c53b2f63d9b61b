#include "kv/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "base/check.h"
#include "tensor/ue8m0_quant.h"

namespace dss {

size_t KvLayout::latent_row_bytes() const {
  switch (dtype) {
    case DType::kF32:
      return 4 * static_cast<size_t>(d_latent + d_rope);
    case DType::kBF16:
      return 2 * static_cast<size_t>(d_latent + d_rope);
    case DType::kF8E4M3:
      return static_cast<size_t>(d_latent) + 4 * static_cast<size_t>(n_latent_scales()) +
             2 * static_cast<size_t>(d_rope);
    default:
      DSS_CHECK(false, "KV cache dtype must be f32, bf16 or fp8");
      return 0;
  }
}

bool kv_dtype_from_name(const char* name, DType& out) {
  const std::string_view s(name);
  if (s == "f32")
    out = DType::kF32;
  else if (s == "bf16")
    out = DType::kBF16;
  else if (s == "fp8")
    out = DType::kF8E4M3;
  else
    return false;
  return true;
}

const char* kv_dtype_name(DType t) {
  return t == DType::kF32 ? "f32" : t == DType::kBF16 ? "bf16" : "fp8";
}

namespace {
struct Offsets {
  size_t index_keys = 0, index_scales = 0, layer = 0;  // bytes, within / of one layer
};
Offsets offsets(const KvLayout& y, int32_t n_pages) {
  const auto n = static_cast<size_t>(n_pages) * static_cast<size_t>(y.page_size);
  auto align64 = [](size_t b) { return (b + 63) / 64 * 64; };
  Offsets o;
  o.index_keys = align64(n * y.latent_row_bytes());
  o.index_scales = align64(o.index_keys + n * static_cast<size_t>(y.d_index));
  o.layer = y.d_index > 0 ? align64(o.index_scales + n * sizeof(float)) : o.index_keys;
  return o;
}
}  // namespace

size_t KvCache::storage_bytes(const KvLayout& layout, int32_t n_pages) {
  return static_cast<size_t>(layout.n_layers) * offsets(layout, n_pages).layer;
}

KvCache::KvCache(const KvLayout& layout, int32_t n_pages, Buffer storage)
    : layout_(layout), n_pages_(n_pages), bytes_(std::move(storage)) {
  DSS_CHECK(layout.n_layers > 0 && layout.d_latent > 0 && layout.page_size > 0 && n_pages > 0,
            "bad KV layout");
  const Offsets o = offsets(layout, n_pages);
  index_keys_offset_ = o.index_keys;
  index_scales_offset_ = o.index_scales;
  layer_bytes_ = o.layer;
  DSS_CHECK(bytes_.size() >= storage_bytes(layout, n_pages), "KV storage of ", bytes_.size(),
            " bytes < ", storage_bytes(layout, n_pages));
}

// Preallocated: resident from start-up, so memory use is known at launch and RSS does not grow
// while the prefix cache fills the pool. Zero-filled: +0.0f scales, zero codes.
KvCache::KvCache(const KvLayout& layout, int32_t n_pages)
    : KvCache(layout, n_pages,
              Buffer::host(layout.n_layers > 0 && n_pages > 0 ? storage_bytes(layout, n_pages) : 0,
                           /*prefault=*/true)) {}

void KvCache::store(int32_t i_layer, int32_t slot, const float* row) {
  DSS_DCHECK(bytes_.space() == MemorySpace::kHost, "KvCache::store/load on device memory");
  const KvLayout& y = layout_;
  const auto s = static_cast<size_t>(slot);
  const int32_t R = y.d_latent, dr = y.d_rope;
  uint8_t* out = layer(i_layer) + s * y.latent_row_bytes();
  if (y.dtype == DType::kF32) {
    std::memcpy(out, row, 4 * static_cast<size_t>(R + dr));
  } else if (y.dtype == DType::kBF16) {
    for (int32_t i = 0; i < R + dr; ++i) {
      const uint16_t v = f32_to_bf16(row[i]);
      std::memcpy(out + 2 * i, &v, 2);
    }
  } else {
    for (int32_t b = 0; b < y.n_latent_scales(); ++b) {
      const int32_t j = b * kKvFp8Block, n = std::min(kKvFp8Block, R - j);
      const float sc = quant_block_ue8m0(row + j, n, out + j);
      std::memcpy(out + R + 4 * b, &sc, 4);
    }
    uint8_t* pe = out + R + 4 * y.n_latent_scales();
    for (int32_t i = 0; i < dr; ++i) {
      const uint16_t v = f32_to_bf16(row[R + i]);
      std::memcpy(pe + 2 * i, &v, 2);
    }
  }
  if (y.d_index > 0) {
    const float* k = row + y.d_index_offset();
    uint8_t* kout = layer(i_layer) + index_keys_offset_;
    for (int32_t i = 0; i < y.d_index; ++i) {
      const uint8_t code = f32_to_fp8e4m3(k[i]);
      // NaN (non-finite weights or activations) passes through: that request fails at its
      // logits (engine.cc), the cache stays usable.
      DSS_DCHECK(std::isnan(k[i]) || fp8e4m3_to_f32(code) == k[i],
                 "indexer key value is not an e4m3 value");
      kout[index_key_at(s, i)] = code;
    }
    std::memcpy(layer(i_layer) + index_scales_offset_ + 4 * s, &k[y.d_index], 4);
  }
}

void KvCache::load(int32_t i_layer, int32_t slot, float* row) const {
  DSS_DCHECK(bytes_.space() == MemorySpace::kHost, "KvCache::store/load on device memory");
  const KvLayout& y = layout_;
  const auto s = static_cast<size_t>(slot);
  const int32_t R = y.d_latent, dr = y.d_rope;
  const uint8_t* in = latent_rows(i_layer) + s * y.latent_row_bytes();
  auto bf16_at = [](const uint8_t* p, int32_t i) {
    uint16_t v;
    std::memcpy(&v, p + 2 * i, 2);
    return bf16_to_f32(v);
  };
  if (y.dtype == DType::kF32) {
    std::memcpy(row, in, 4 * static_cast<size_t>(R + dr));
  } else if (y.dtype == DType::kBF16) {
    for (int32_t i = 0; i < R + dr; ++i) row[i] = bf16_at(in, i);
  } else {
    for (int32_t i = 0; i < R; ++i) {
      float sc;
      std::memcpy(&sc, in + R + 4 * (i / kKvFp8Block), 4);
      row[i] = fp8e4m3_to_f32(in[i]) * sc;
    }
    const uint8_t* pe = in + R + 4 * y.n_latent_scales();
    for (int32_t i = 0; i < dr; ++i) row[R + i] = bf16_at(pe, i);
  }
  if (y.d_index > 0) {
    const uint8_t* k = index_keys(i_layer);
    float* kout = row + y.d_index_offset();
    for (int32_t i = 0; i < y.d_index; ++i) kout[i] = fp8e4m3_to_f32(k[index_key_at(s, i)]);
    kout[y.d_index] = index_scales(i_layer)[s];
  }
}

size_t KvLayout::bytes_per_token() const {
  return static_cast<size_t>(n_layers) * (latent_row_bytes() + index_row_bytes());
}

}  // namespace dss
