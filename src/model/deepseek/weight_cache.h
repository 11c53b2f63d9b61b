// A file holding a loaded model's weight arena (ModelWeights::arena: the tiled repack, the
// conversions, W_UK^T), written once and mapped on later loads of the same checkpoint with the
// same placement: no repack and no fresh memory (the pages are the page cache's, shared by every
// process mapping the file). `--weight-cache DIR` (docs/quantization.md).
// The file is named by a 64-bit FNV-1a key over the checkpoint's identity (its directory, every
// file's name, size and modification time) and the arena's layout (every placed matrix's dtype,
// shape, layout, arithmetic and offsets); a file of another size is ignored and rewritten.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/buffer.h"
#include "base/status.h"

namespace dss {

// 64-bit FNV-1a, continued from `h`.
uint64_t fnv1a(const std::string& s, uint64_t h = 0xcbf29ce484222325ull);

// The checkpoint directory's identity: its path and each regular file's name, size and mtime.
std::string checkpoint_identity(const std::string& dir);

// DIR/<key as 16 hex digits>.weights
std::string weight_cache_path(const std::string& dir, uint64_t key);

// The file at `path` mapped read-only, when it exists with exactly `bytes` bytes; else nullopt.
std::optional<Buffer> map_weight_cache(const std::string& path, size_t bytes);

// Writes `arena` to `path` (through a temporary file and a rename: readers never see a partial
// file). Errors name the path.
Status write_weight_cache(const std::string& path, const Buffer& arena);

}  // namespace dss
