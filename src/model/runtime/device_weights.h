// The loaded weights moved onto a CUDA device (CUDA builds): every matrix a forward reads (its
// data and its scales) and every norm vector is copied once into one arena of the backend's
// device memory (MemoryUse::kWeights) and the views are pointed there; the host arena is freed.
// Views sharing data (tied embeddings) share the copy. The host arrays the blocks pass by pointer
// (RoPE frequencies, the V3.2 indexer's LayerNorm) become the backend's mirrored constants.
#pragma once

#include "backend/cuda/cuda_backend.h"
#include "base/status.h"
#include "model/deepseek/rope.h"
#include "model/deepseek/weights.h"

namespace dss {

// Row-major weights only (load_weights without tiling); the checkpoint mapping may then be
// dropped by the caller. Returns the bytes uploaded.
Result<size_t> upload_weights(ModelWeights& w, const RopeTable& rope, CudaBackend& be);

}  // namespace dss
