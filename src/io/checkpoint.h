// A Hugging Face checkpoint directory: config.json plus safetensors weights, either one
// `model.safetensors` or shards listed in `model.safetensors.index.json` ({"weight_map":
// {tensor: file}}). Files are memory-mapped; tensors are handed out as views (zero copy).
//
// `open` maps every shard named by the index and checks that each indexed tensor is present in
// its file; errors name the directory, file and tensor.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "io/safetensors.h"

namespace dss {

class Checkpoint {
 public:
  static Result<Checkpoint> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  bool has(const std::string& name) const { return where_.count(name) != 0; }
  // Errors: "<dir>: tensor '<name>' missing from the checkpoint".
  Result<TensorView> get(const std::string& name) const;
  // All tensor names (sorted).
  std::vector<std::string> names() const;
  // Total bytes of tensor data across shards.
  size_t total_bytes() const;
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unordered_map<std::string, const SafetensorsFile*> where_;
};

}  // namespace dss
