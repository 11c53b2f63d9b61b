// Buffer: memory a backend allocated for the model (the weights' arena, the KV pool, the
// activations of a Workspace), owned together with the way to free it. Where it lives is its
// MemorySpace: host memory (the CPU backend; readable by any code here) or device memory (a
// device backend; only that backend's operations touch it). Move-only; freed on destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace dss {

enum class MemorySpace : uint8_t { kHost, kDevice };

class Buffer {
 public:
  // Frees the memory in its destructor (a host mapping, a device allocation).
  struct Owner {
    virtual ~Owner() = default;
  };

  Buffer() = default;
  Buffer(uint8_t* data, size_t bytes, MemorySpace space, std::unique_ptr<Owner> owner)
      : data_(data), size_(bytes), space_(space), owner_(std::move(owner)) {}
  // `bytes` zero bytes of host memory on transparent huge pages (base/huge_buffer.h); resident
  // from the start when `prefault` (a preallocated pool: its memory is paid at start-up).
  static Buffer host(size_t bytes, bool prefault = false);

  Buffer(Buffer&& o) noexcept = default;
  Buffer& operator=(Buffer&& o) noexcept = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  MemorySpace space() const { return space_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  MemorySpace space_ = MemorySpace::kHost;
  std::unique_ptr<Owner> owner_;
};

}  // namespace dss
