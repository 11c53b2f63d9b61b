#include "kv/kv_cache.h"

#include <algorithm>

#include "base/check.h"
#include "tensor/dtype.h"

namespace dss {

KvCache::KvCache(const KvLayout& layout, int32_t n_pages) : layout_(layout), n_pages_(n_pages) {
  DSS_CHECK(layout.n_layers > 0 && layout.d_row() > 0 && layout.page_size > 0 && n_pages > 0,
            "bad KV layout");
  const size_t n = static_cast<size_t>(n_slots()) * layout.d_row();
  if (layout.bf16) {
    data16_.resize(static_cast<size_t>(layout.n_layers));
    for (auto& d : data16_) d.assign(n, 0);
  } else {
    data_.resize(static_cast<size_t>(layout.n_layers));
    for (auto& d : data_) d.assign(n, 0.0f);
  }
}

void KvCache::store(int32_t i_layer, int32_t slot, const float* row) {
  const size_t d = static_cast<size_t>(layout_.d_row()), off = static_cast<size_t>(slot) * d;
  if (layout_.bf16) {
    uint16_t* out = data16_[static_cast<size_t>(i_layer)].data() + off;
    for (size_t i = 0; i < d; ++i) out[i] = f32_to_bf16(row[i]);
  } else {
    std::copy(row, row + d, data_[static_cast<size_t>(i_layer)].data() + off);
  }
}

void KvCache::load(int32_t i_layer, int32_t slot, float* row) const {
  const size_t d = static_cast<size_t>(layout_.d_row()), off = static_cast<size_t>(slot) * d;
  if (layout_.bf16) {
    const uint16_t* in = data16_[static_cast<size_t>(i_layer)].data() + off;
    for (size_t i = 0; i < d; ++i) row[i] = bf16_to_f32(in[i]);
  } else {
    const float* in = data_[static_cast<size_t>(i_layer)].data() + off;
    std::copy(in, in + d, row);
  }
}

size_t KvCache::bytes_per_token() const {
  return static_cast<size_t>(layout_.n_layers) * layout_.d_row() * (layout_.bf16 ? 2 : 4);
}

size_t KvCache::bytes_per_page() const { return bytes_per_token() * layout_.page_size; }

}  // namespace dss
