#include "io/safetensors_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/json.h"

namespace dss {

namespace fs = std::filesystem;

namespace {
int dtype_order(DType t) {  // the order the safetensors library writes (by alignment, then name)
  switch (t) {
    case DType::kI64:
      return 0;
    case DType::kF32:
      return 1;
    case DType::kI32:
      return 2;
    case DType::kBF16:
      return 3;
    case DType::kF16:
      return 4;
    case DType::kF8E4M3:
      return 5;
    case DType::kI8:
      return 6;
    case DType::kU8:
      return 7;
  }
  return 8;
}
}  // namespace

namespace {
size_t n_bytes_of(DType t, const std::vector<int64_t>& shape) {
  size_t n = dtype_size(t);
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

template <typename E>
void sort_entries(std::vector<E>& entries) {
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    if (dtype_order(a.dtype) != dtype_order(b.dtype))
      return dtype_order(a.dtype) < dtype_order(b.dtype);
    return a.name < b.name;
  });
}

// Compact JSON with __metadata__ first, then tensors in data order, padded to 8 bytes.
template <typename E, typename SizeFn>
std::string make_header(const std::vector<E>& entries, SizeFn size_of) {
  std::string header = R"({"__metadata__":{"format":"pt"})";
  uint64_t offset = 0;
  for (const auto& e : entries) {
    OrderedJson t;
    t["dtype"] = std::string(dtype_name(e.dtype));
    t["shape"] = e.shape;
    const uint64_t n = size_of(e);
    t["data_offsets"] = {offset, offset + n};
    header += "," + Json(e.name).dump() + ":" + t.dump();
    offset += n;
  }
  header += "}";
  while ((header.size() % 8) != 0) header += ' ';
  return header;
}

void write_header(std::ofstream& out, const std::string& header) {
  const uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
}
}  // namespace

Status write_safetensors(const std::string& path, std::vector<SafetensorsEntry> entries) {
  sort_entries(entries);
  const std::string header =
      make_header(entries, [](const SafetensorsEntry& e) { return e.bytes->size(); });
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::error(path, ": cannot create: ", std::strerror(errno));
  write_header(out, header);
  for (const auto& e : entries) {
    out.write(reinterpret_cast<const char*>(e.bytes->data()),
              static_cast<std::streamsize>(e.bytes->size()));
  }
  out.close();
  if (!out) return Status::error(path, ": write failed");
  return Status::ok();
}

Status write_safetensors_streamed(const std::string& path, std::vector<SafetensorsLayout> entries,
                                  const TensorBytesFn& fill) {
  sort_entries(entries);
  const std::string header =
      make_header(entries, [](const SafetensorsLayout& e) { return n_bytes_of(e.dtype, e.shape); });
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::error(path, ": cannot create: ", std::strerror(errno));
  write_header(out, header);
  for (const auto& e : entries) {
    DSS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, fill(e));
    if (bytes.size() != n_bytes_of(e.dtype, e.shape)) {
      return Status::error(path, ": tensor '", e.name, "' produced ", bytes.size(),
                           " bytes, expected ", n_bytes_of(e.dtype, e.shape));
    }
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  out.close();
  if (!out) return Status::error(path, ": write failed");
  return Status::ok();
}

CheckpointWriter::CheckpointWriter(std::string dir, size_t shard_bytes)
    : dir_(std::move(dir)), shard_bytes_(shard_bytes) {}

Status CheckpointWriter::add(const std::string& name, DType dtype, std::vector<int64_t> shape,
                             std::vector<uint8_t> bytes) {
  pending_bytes_ += bytes.size();
  total_bytes_ += bytes.size();
  pending_.push_back(Pending{name, dtype, std::move(shape), std::move(bytes)});
  if (pending_bytes_ >= shard_bytes_) return flush_shard();
  return Status::ok();
}

Status CheckpointWriter::flush_shard() {
  if (pending_.empty()) return Status::ok();
  const std::string tmp = "shard-" + std::to_string(shard_tmp_names_.size()) + ".tmp";
  std::vector<SafetensorsEntry> entries;
  std::vector<std::string> names;
  for (const auto& p : pending_) {
    entries.push_back({p.name, p.dtype, p.shape, &p.bytes});
    names.push_back(p.name);
  }
  DSS_RETURN_IF_ERROR(write_safetensors((fs::path(dir_) / tmp).string(), std::move(entries)));
  shard_tmp_names_.push_back(tmp);
  shard_tensors_.push_back(std::move(names));
  pending_.clear();
  pending_bytes_ = 0;
  return Status::ok();
}

Status CheckpointWriter::finish() {
  DSS_RETURN_IF_ERROR(flush_shard());
  const size_t k = shard_tmp_names_.size();
  OrderedJson index;
  index["metadata"] = {{"total_size", total_bytes_}};
  std::map<std::string, std::string> weight_map;
  for (size_t i = 0; i < k; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05zu-of-%06zu.safetensors", i + 1, k);
    std::error_code ec;
    fs::rename(fs::path(dir_) / shard_tmp_names_[i], fs::path(dir_) / name, ec);
    if (ec) return Status::error(dir_, ": rename failed: ", ec.message());
    for (const auto& t : shard_tensors_[i]) weight_map[t] = name;
  }
  index["weight_map"] = weight_map;
  std::ofstream out(fs::path(dir_) / "model.safetensors.index.json");
  out << index.dump(2) << "\n";
  if (!out) return Status::error(dir_, ": cannot write model.safetensors.index.json");
  return Status::ok();
}

}  // namespace dss
