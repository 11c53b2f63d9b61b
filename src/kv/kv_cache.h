// KvCache owns the bytes of the MLA cache: per layer, per token slot, the normalised
// kv_lora_rank latent followed by the rotated d_rope key (the 576 values FlashMLA caches for V3).
//
// Slots are addressed as page * page_size + offset; which pages belong to which sequence is the
// caller's business (page tables in ForwardBatch). No policy here. Not thread-safe: the engine
// thread writes it through Model::forward.
//
// Layout: one buffer per layer, [n_pages * page_size, d_row] f32, row-major, where a row is
// [d_latent latent | d_rope rope key | (V3.2) d_index indexer key (e4m3 values) | 1 key scale].
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dss {

struct KvLayout {
  int32_t n_layers = 0;
  int32_t d_latent = 0;    // kv_lora_rank
  int32_t d_rope = 0;      // qk_rope_head_dim
  int32_t page_size = 64;  // tokens per page
  int32_t d_index = 0;     // V3.2 indexer key width (0: none); the row then also holds d_index
                           // e4m3 values (as f32) and their one power-of-two scale
  bool bf16 = false;       // storage dtype: bf16 (halves the bytes) or f32
  int32_t d_index_offset() const { return d_latent + d_rope; }
  int32_t d_row() const { return d_latent + d_rope + (d_index > 0 ? d_index + 1 : 0); }
};

class KvCache {
 public:
  KvCache(const KvLayout& layout, int32_t n_pages);

  const KvLayout& layout() const { return layout_; }
  int32_t n_pages() const { return n_pages_; }
  int32_t n_slots() const { return n_pages_ * layout_.page_size; }
  // Writes / reads one slot's whole row ([d_row] f32 values), converting to / from the storage
  // dtype (bf16: round to nearest even).
  void store(int32_t i_layer, int32_t slot, const float* row);
  void load(int32_t i_layer, int32_t slot, float* row) const;
  size_t bytes_per_page() const;
  size_t bytes_per_token() const;  // over all layers

 private:
  KvLayout layout_;
  int32_t n_pages_;
  std::vector<std::vector<float>> data_;       // f32 storage: [n_layers][n_slots * d_row]
  std::vector<std::vector<uint16_t>> data16_;  // bf16 storage: [n_layers][n_slots * d_row]
};

}  // namespace dss
