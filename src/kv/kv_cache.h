// KvCache owns the bytes of the MLA cache (docs/kv_layout.md): per layer, per token slot, the
// normalised kv_lora_rank latent and the rotated d_rope key (the 576 values FlashMLA caches for
// V3), and for V3.2 the lightning indexer's key in its own per-layer storage.
//
// Slots are addressed as page * page_size + offset; which pages belong to which sequence is the
// caller's business (page tables in ForwardBatch). No policy here. Not thread-safe: the engine
// thread writes it through Model::forward; the attention kernels read it in place.
//
// Per layer (bracket order = memory order):
//   latent rows   [n_slots, latent_row_bytes()] bytes, one row per slot:
//     kF32     [d_latent f32 | d_rope f32]                                   4 * (d_latent +
//     d_rope) kBF16    [d_latent bf16 | d_rope bf16]                                 2 * (d_latent
//     + d_rope) kF8E4M3  [d_latent e4m3 | n_blocks f32 scales | d_rope bf16]           d_latent + 4
//     * n_blocks
//              n_blocks = ceil(d_latent / 128), scales powers of two         + 2 * d_rope
//              (671B: 512 + 16 + 128 = 656 bytes, FlashMLA's V3.2 layout)
//   (V3.2) indexer keys    [n_pages, d_index, page_size] e4m3 bytes } the reference's indexer
//          indexer scales  [n_slots] f32                              } k-cache, whatever the
//                                                                       latent dtype
//     Indexer keys are transposed within each page: value d of slot s = page * page_size + o is
//     at (page * d_index + d) * page_size + o, so the scoring kernel loads dimension d of
//     consecutive keys as one vector (kernels/cpu/indexer_score.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/buffer.h"
#include "tensor/dtype.h"

namespace dss {

// Values per fp8 latent scale block (one power-of-two f32 scale per block).
inline constexpr int32_t kKvFp8Block = 128;

struct KvLayout {
  int32_t n_layers = 0;
  int32_t d_latent = 0;       // kv_lora_rank
  int32_t d_rope = 0;         // qk_rope_head_dim
  int32_t page_size = 64;     // tokens per page
  int32_t d_index = 0;        // V3.2 indexer key width (0: none)
  DType dtype = DType::kF32;  // latent + rope storage: kF32 | kBF16 | kF8E4M3

  int32_t n_latent_scales() const {
    return dtype == DType::kF8E4M3 ? (d_latent + kKvFp8Block - 1) / kKvFp8Block : 0;
  }
  size_t latent_row_bytes() const;  // bytes of one slot's latent row (table above)
  size_t index_row_bytes() const {  // d_index e4m3 bytes + one f32 scale
    return d_index > 0 ? static_cast<size_t>(d_index) + 4 : 0;
  }
  // Bytes per token over all layers (latent row + indexer row), and per page.
  size_t bytes_per_token() const;
  size_t bytes_per_page() const { return bytes_per_token() * static_cast<size_t>(page_size); }
  // The f32 row KvCache::store takes and load returns:
  // [d_latent | d_rope | (V3.2) d_index e4m3 values as f32 | their scale].
  int32_t d_index_offset() const { return d_latent + d_rope; }
  int32_t d_row() const { return d_latent + d_rope + (d_index > 0 ? d_index + 1 : 0); }
};

// "f32" | "bf16" | "fp8" -> storage dtype; false if the name is none of these.
bool kv_dtype_from_name(const char* name, DType& out);
const char* kv_dtype_name(DType t);  // inverse of kv_dtype_from_name

class KvCache {
 public:
  // Bytes of storage a cache of `n_pages` pages of `layout` needs (all layers).
  static size_t storage_bytes(const KvLayout& layout, int32_t n_pages);
  // Over `storage` (zero-filled, at least storage_bytes; the backend allocated it:
  // Model::make_kv_cache). store/load and the CPU kernels need it in host memory; a device
  // backend's cache keeps this layout in device memory and writes it with its own kv_store_rows.
  KvCache(const KvLayout& layout, int32_t n_pages, Buffer storage);
  // Over host memory of its own, resident from the start (tools and kernel tests with no model).
  KvCache(const KvLayout& layout, int32_t n_pages);

  const KvLayout& layout() const { return layout_; }
  int32_t n_pages() const { return n_pages_; }
  int32_t n_slots() const { return n_pages_ * layout_.page_size; }
  // Writes one slot from an f32 row (KvLayout::d_row). bf16: round to nearest even. fp8: per
  // 128-value block s = 2^ceil(log2(max(amax, 1e-4) / 448)), codes e4m3_rne(x / s) - the V3.2
  // reference's act_quant (UE8M0), so a latent that already went through it (V3.2) is stored
  // exactly (tensor/ue8m0_quant.h, shared with the model). The indexer values must be e4m3
  // values (stored exactly).
  void store(int32_t i_layer, int32_t slot, const float* row);
  // Reads one slot back as an f32 row (tests and tools; the forward pass reads in place).
  void load(int32_t i_layer, int32_t slot, float* row) const;
  // In-place storage of layer i_layer (layout in the file comment).
  const uint8_t* latent_rows(int32_t i_layer) const { return layer(i_layer); }
  const uint8_t* index_keys(int32_t i_layer) const {  // [n_pages, d_index, page_size]
    return layer(i_layer) + index_keys_offset_;
  }
  const float* index_scales(int32_t i_layer) const {  // [n_slots]
    return reinterpret_cast<const float*>(layer(i_layer) + index_scales_offset_);
  }
  size_t bytes_per_page() const { return layout_.bytes_per_page(); }
  size_t bytes_per_token() const { return layout_.bytes_per_token(); }

 private:
  KvLayout layout_;
  int32_t n_pages_;
  // One zero-filled buffer (on the CPU backend: huge pages, base/huge_buffer.h: the sparse V3.2
  // gather reads rows scattered over the whole cache) holding per layer, layer_bytes_ apart: the
  // latent rows [n_slots * latent_row_bytes], then (V3.2) the indexer keys [n_slots * d_index] at
  // index_keys_offset_ and their scales [n_slots] f32 at index_scales_offset_ (64-byte aligned).
  Buffer bytes_;
  size_t layer_bytes_ = 0, index_keys_offset_ = 0, index_scales_offset_ = 0;
  uint8_t* layer(int32_t i) { return bytes_.data() + static_cast<size_t>(i) * layer_bytes_; }
  const uint8_t* layer(int32_t i) const {
    return bytes_.data() + static_cast<size_t>(i) * layer_bytes_;
  }
  // Offset of value d of slot s's indexer key from index_keys(layer) (transposed pages).
  size_t index_key_at(size_t s, int32_t d) const {
    const auto P = static_cast<size_t>(layout_.page_size);
    return ((s / P) * static_cast<size_t>(layout_.d_index) + static_cast<size_t>(d)) * P + s % P;
  }
};

}  // namespace dss
