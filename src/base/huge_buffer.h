// Zero-filled anonymous memory for large, long-lived arrays (the KV cache, repacked weights) with
// transparent huge pages requested (madvise MADV_HUGEPAGE; Debian's default THP mode "madvise"
// gives them to no one else). A kernel that reads rows scattered over hundreds of MiB (V3.2
// sparse attention gathering 2048 rows of a 32K-token cache) then costs one 2 MiB TLB entry per
// huge page instead of a page walk per 4 KiB row. Where the kernel refuses huge pages (THP
// "never", no contiguous memory) the buffer silently uses 4 KiB pages: same contents, only
// slower. Buffers under 2 MiB always use 4 KiB pages. Pages are backed on first touch. Move-only;
// the memory is released on destruction.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dss {

class HugeBuffer {
 public:
  HugeBuffer() = default;
  // `bytes` zero bytes (0: empty, data() == nullptr). Aborts (CHECK) when the mapping fails.
  explicit HugeBuffer(size_t bytes);
  ~HugeBuffer();
  HugeBuffer(HugeBuffer&& o) noexcept;
  HugeBuffer& operator=(HugeBuffer&& o) noexcept;
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;

  // Backs every page now (writes one zero byte per 4 KiB page, after the huge-page hint), so the
  // buffer is resident from here on: a preallocated pool (the KV cache) then costs its memory at
  // start-up and RSS does not grow as the pool fills.
  void prefault();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0, mapped_ = 0;
};

}  // namespace dss
