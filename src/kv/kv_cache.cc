#include "kv/kv_cache.h"

#include "base/check.h"

namespace dss {

KvCache::KvCache(const KvLayout& layout, int32_t n_pages) : layout_(layout), n_pages_(n_pages) {
  DSS_CHECK(layout.n_layers > 0 && layout.d_row() > 0 && layout.page_size > 0 && n_pages > 0,
            "bad KV layout");
  data_.resize(static_cast<size_t>(layout.n_layers));
  for (auto& d : data_) d.assign(static_cast<size_t>(n_slots()) * layout.d_row(), 0.0f);
}

size_t KvCache::bytes_per_token() const {
  return static_cast<size_t>(layout_.n_layers) * layout_.d_row() * sizeof(float);
}

size_t KvCache::bytes_per_page() const { return bytes_per_token() * layout_.page_size; }

}  // namespace dss
