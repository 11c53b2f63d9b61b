#include "base/huge_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/check.h"

namespace dss {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

HugeBuffer::HugeBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  // From one huge page up: mapped in whole huge pages (the tail of the last one unused), so every
  // byte can be backed by one. Smaller buffers keep 4 KiB pages (a huge page each would multiply
  // their memory). mmap returns zero-filled memory.
  const bool huge = bytes >= kHugePage;
  const size_t unit = huge ? kHugePage : size_t{4096};
  mapped_ = (bytes + unit - 1) / unit * unit;
  void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  DSS_CHECK(p != MAP_FAILED, "mmap of ", mapped_, " bytes failed: ", std::strerror(errno));
  if (huge) (void)madvise(p, mapped_, MADV_HUGEPAGE);  // a hint: refused means 4 KiB pages
  data_ = static_cast<uint8_t*>(p);
}

void HugeBuffer::prefault() {
  volatile uint8_t* p = data_;
  for (size_t i = 0; i < mapped_; i += 4096) p[i] = 0;
}

HugeBuffer::~HugeBuffer() {
  if (data_ != nullptr) munmap(data_, mapped_);
}

HugeBuffer::HugeBuffer(HugeBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      mapped_(std::exchange(o.mapped_, 0)) {}

HugeBuffer& HugeBuffer::operator=(HugeBuffer&& o) noexcept {
  if (this != &o) {
    if (data_ != nullptr) munmap(data_, mapped_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mapped_ = std::exchange(o.mapped_, 0);
  }
  return *this;
}

}  // namespace dss
