// Writes checkpoints in the official layout: sharded `model-0000N-of-00000K.safetensors`
// (5-digit index, 6-digit total, as DeepSeek names them) plus `model.safetensors.index.json`.
// Tensors are buffered per shard and written when the shard is full, so memory stays bounded by
// the shard size. Header: `__metadata__ {"format": "pt"}`, compact JSON, space-padded to 8 bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"

namespace dss {

class CheckpointWriter {
 public:
  // Shards close once they hold `shard_bytes`; `n_shards_hint` is the K in the file names
  // (files are renamed at `finish` if the real count differs).
  CheckpointWriter(std::string dir, size_t shard_bytes);
  Status add(const std::string& name, DType dtype, std::vector<int64_t> shape,
             std::vector<uint8_t> bytes);
  // Flushes the last shard, fixes the file names and writes the index.
  Status finish();

 private:
  struct Pending {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  Status flush_shard();

  std::string dir_;
  size_t shard_bytes_;
  size_t pending_bytes_ = 0;
  std::vector<Pending> pending_;
  std::vector<std::string> shard_tmp_names_;
  std::vector<std::vector<std::string>> shard_tensors_;
  size_t total_bytes_ = 0;
};

// Writes one safetensors file with the given tensors (in the order the safetensors library uses:
// F32, BF16, F8_E4M3 ... then by name). Used by the writer above and by tests.
struct SafetensorsEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const std::vector<uint8_t>* bytes;
};
Status write_safetensors(const std::string& path, std::vector<SafetensorsEntry> entries);

// The same file format and tensor order, with each tensor's bytes produced by `fill` just before
// it is written (memory: one tensor at a time). Every buffer must hold exactly
// product(shape) * dtype_size bytes (checked; a mismatch is an error naming the tensor).
struct SafetensorsLayout {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
};
using TensorBytesFn = std::function<Result<std::vector<uint8_t>>(const SafetensorsLayout&)>;
Status write_safetensors_streamed(const std::string& path, std::vector<SafetensorsLayout> entries,
                                  const TensorBytesFn& fill);

}  // namespace dss
