#include "model/runtime/device_weights.h"

#include <map>

namespace dss {

namespace {

size_t scale_bytes(const Matrix& m) {
  if (m.dtype == DType::kF8E4M3)
    return static_cast<size_t>(m.n_scale_rows() * m.n_scale_cols()) * 4;
  if (m.dtype == DType::kI8) return static_cast<size_t>(m.n_rows) * 4;
  return 0;
}

template <typename Fn>
void for_each_vector(ModelWeights& w, Fn&& fn) {
  fn(w.final_norm);
  for (LayerWeights& L : w.layers) {
    fn(L.attn_norm);
    fn(L.ffn_norm);
    fn(L.mla.q_a_norm);
    fn(L.mla.kv_a_norm);
  }
}

// Host ranges to copy, by start address: the largest extent any view reads from there.
class Plan {
 public:
  void add(const void* p, size_t bytes) {
    if (p == nullptr || bytes == 0) return;
    size_t& b = extent_[static_cast<const uint8_t*>(p)];
    b = std::max(b, bytes);
  }
  // Device offsets, 64-byte aligned; returns the total.
  size_t place() {
    size_t off = 0;
    for (auto& [p, bytes] : extent_) {
      offset_[p] = off;
      off = (off + bytes + 63) / 64 * 64;
    }
    return off;
  }
  const std::map<const uint8_t*, size_t>& extents() const { return extent_; }
  size_t offset(const void* p) const { return offset_.at(static_cast<const uint8_t*>(p)); }

 private:
  std::map<const uint8_t*, size_t> extent_, offset_;
};

}  // namespace

Result<size_t> upload_weights(ModelWeights& w, const RopeTable& rope, CudaBackend& be) {
  Plan plan;
  Status bad = Status::ok();
  for_each_matrix(w, [&](Matrix& m) {
    if (m.empty()) return;
    if (m.layout != WeightLayout::kRowMajor)
      bad = Status::error("upload_weights: a ", m.n_rows, " x ", m.n_cols, " matrix is tiled");
    plan.add(m.data, m.data_bytes());
    plan.add(m.scales, scale_bytes(m));
  });
  DSS_RETURN_IF_ERROR(bad);
  for_each_vector(
      w, [&](Vector& v) { plan.add(v.data, static_cast<size_t>(v.n) * dtype_size(v.dtype)); });
  const size_t total = plan.place();
  Buffer arena = be.allocate(total, MemoryUse::kWeights);
  for (const auto& [p, bytes] : plan.extents()) be.upload(arena.data() + plan.offset(p), p, bytes);
  auto moved = [&](const void* p) -> const uint8_t* {
    return p == nullptr ? nullptr : arena.data() + plan.offset(p);
  };
  for_each_matrix(w, [&](Matrix& m) {
    if (m.empty()) return;
    m.data = moved(m.data);
    m.scales = reinterpret_cast<const float*>(moved(m.scales));
  });
  for_each_vector(w, [&](Vector& v) { v.data = moved(v.data); });
  for (LayerWeights& L : w.layers) {
    if (!L.mla.has_indexer) continue;
    be.mirror_constant(L.mla.indexer.k_norm_w.data(), L.mla.indexer.k_norm_w.size());
    be.mirror_constant(L.mla.indexer.k_norm_b.data(), L.mla.indexer.k_norm_b.size());
  }
  be.mirror_constant(rope.freqs().data(), rope.freqs().size());
  w.arena = std::move(arena);
  return total;
}

}  // namespace dss
