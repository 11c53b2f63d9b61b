#include "model/deepseek/weight_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "base/str_cat.h"

namespace dss {

namespace fs = std::filesystem;

uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (const char c : s) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string checkpoint_identity(const std::string& dir) {
  std::vector<std::string> entries;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    struct stat st {};
    if (::stat(e.path().c_str(), &st) != 0) continue;
    entries.push_back(str_cat(e.path().filename().string(), ":", st.st_size, ":", st.st_mtim.tv_sec,
                              ".", st.st_mtim.tv_nsec));
  }
  std::sort(entries.begin(), entries.end());
  std::string id = fs::absolute(dir, ec).string();
  for (const std::string& e : entries) id += "|" + e;
  return id;
}

std::string weight_cache_path(const std::string& dir, uint64_t key) {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.weights", static_cast<unsigned long long>(key));
  return (fs::path(dir) / name).string();
}

namespace {
struct Mapping : Buffer::Owner {
  void* p = nullptr;
  size_t n = 0;
  ~Mapping() override {
    if (p != nullptr) ::munmap(p, n);
  }
};
}  // namespace

std::optional<Buffer> map_weight_cache(const std::string& path, size_t bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  void* p = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) == bytes && bytes > 0)
    p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return std::nullopt;
  auto owner = std::make_unique<Mapping>();
  owner->p = p;
  owner->n = bytes;
  return Buffer(static_cast<uint8_t*>(p), bytes, MemorySpace::kHost, std::move(owner));
}

Status write_weight_cache(const std::string& path, const Buffer& arena) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = str_cat(path, ".tmp", ::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Status::error(tmp, ": ", std::strerror(errno));
  const bool ok = std::fwrite(arena.data(), 1, arena.size(), f) == arena.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Status::error(path, ": ", why);
  }
  return Status::ok();
}

}  // namespace dss
