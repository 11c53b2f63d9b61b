#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "io/json.h"

namespace dss {

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorView::shape_str() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  DSS_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  const size_t size = file.size();
  if (size < 8)
    return Status::error(path, ": file too small for a safetensors header (", size, " bytes)");
  uint64_t header_len = 0;
  std::memcpy(&header_len, file.data(), 8);  // little-endian hosts only (x86-64, aarch64)
  if (header_len > size - 8) {
    return Status::error(path, ": header length ", header_len, " exceeds the file size ", size,
                         " (truncated or not a safetensors file)");
  }
  const std::string header(reinterpret_cast<const char*>(file.data() + 8), header_len);
  Json j = Json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::error(path, ": corrupt header (not a JSON object)");

  SafetensorsFile st;
  const uint64_t data_begin = 8 + header_len;
  const uint64_t data_size = size - data_begin;
  std::vector<std::pair<uint64_t, std::string>> order;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const Json& e = it.value();
    if (name == "__metadata__") {
      if (!e.is_object()) return Status::error(path, ": __metadata__ is not an object");
      for (auto m = e.begin(); m != e.end(); ++m) {
        if (m.value().is_string()) st.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& why) {
      return Status::error(path, ": tensor '", name, "': ", why);
    };
    if (!e.is_object()) return bad("header entry is not an object");
    if (!e.contains("dtype") || !e["dtype"].is_string()) return bad("missing dtype");
    const auto dtype = dtype_from_name(e["dtype"].get<std::string>());
    if (!dtype) return bad("unsupported dtype " + e["dtype"].get<std::string>());
    if (!e.contains("shape") || !e["shape"].is_array()) return bad("missing shape");
    Entry entry{*dtype, {}, 0, 0};
    uint64_t numel = 1;
    for (const Json& d : e["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        return bad("shape has a non-integer or negative dimension");
      const auto dim = d.get<uint64_t>();
      if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / dim)
        return bad("shape overflows");
      numel *= dim;
      entry.shape.push_back(static_cast<int64_t>(dim));
    }
    const Json& off = e.contains("data_offsets") ? e["data_offsets"] : Json();
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned()) {
      return bad("missing or malformed data_offsets");
    }
    const auto b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
    if (b > en) return bad("data_offsets begin > end");
    if (en > data_size) {
      return bad("data ends at byte " + std::to_string(data_begin + en) + " but the file has " +
                 std::to_string(size) + " bytes (truncated?)");
    }
    if (en - b != numel * dtype_size(*dtype)) {
      return bad("byte range " + std::to_string(en - b) + " does not match shape and dtype (" +
                 std::to_string(numel * dtype_size(*dtype)) + " bytes expected)");
    }
    entry.begin = data_begin + b;
    entry.end = data_begin + en;
    order.emplace_back(entry.begin, name);
    st.index_.emplace(name, std::move(entry));
  }
  std::sort(order.begin(), order.end());
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0) {
      const Entry& prev = st.index_.at(order[i - 1].second);
      const Entry& cur = st.index_.at(order[i].second);
      if (cur.begin < prev.end && cur.end > cur.begin) {
        return Status::error(path, ": tensor '", order[i].second, "' overlaps tensor '",
                             order[i - 1].second, "'");
      }
    }
    st.names_.push_back(order[i].second);
  }
  st.file_ = std::move(file);
  return st;
}

Result<TensorView> SafetensorsFile::get(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return Status::error(path(), ": tensor '", name, "' not found");
  const Entry& e = it->second;
  TensorView v;
  v.name = name;
  v.file = path();
  v.dtype = e.dtype;
  v.shape = e.shape;
  v.data = file_.data() + e.begin;
  v.n_bytes = e.end - e.begin;
  return v;
}

}  // namespace dss
