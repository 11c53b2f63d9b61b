#include "base/buffer.h"

#include "base/huge_buffer.h"

namespace dss {

namespace {
struct HostOwner final : Buffer::Owner {
  explicit HostOwner(HugeBuffer b) : mem(std::move(b)) {}
  HugeBuffer mem;
};
}  // namespace

Buffer Buffer::host(size_t bytes, bool prefault) {
  HugeBuffer mem(bytes);
  if (prefault) mem.prefault();
  uint8_t* data = mem.data();
  return Buffer(data, bytes, MemorySpace::kHost, std::make_unique<HostOwner>(std::move(mem)));
}

}  // namespace dss
