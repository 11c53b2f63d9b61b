// Reader for the safetensors format: 8-byte little-endian header length N, N bytes of JSON
// header {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
// then raw little-endian tensor data; offsets are relative to the end of the header.
//
// `open` validates everything it can without reading tensor data: header length within the
// file, JSON well-formed, known dtype, shape product * dtype size == byte range, ranges inside
// the file and not overlapping. Every error names the file and, where one is involved, the tensor.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "io/mapped_file.h"
#include "tensor/dtype.h"

namespace dss {

// A typed, non-owning view of one tensor inside a mapped file.
struct TensorView {
  std::string name;
  std::string file;  // path of the file holding it (for error messages)
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t n_bytes = 0;

  int64_t numel() const;
  std::string shape_str() const;  // "[576, 256]"
};

class SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  // Tensor names in file order (by data offset).
  const std::vector<std::string>& names() const { return names_; }
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  // Errors: "<path>: tensor '<name>' not found".
  Result<TensorView> get(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  struct Entry {
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t begin, end;  // absolute byte offsets in the file
  };
  MappedFile file_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, Entry> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace dss
