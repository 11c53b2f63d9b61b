// Placing loaded weights in memory: the tiled repack, the bf16-dot re-layout and the one weight
// arena, run over a thread pool, with the mapped checkpoint pages released as they are consumed.
#pragma once

#include <string>

#include "base/thread_pool.h"
#include "model/deepseek/weights.h"

namespace dss {

// Moves into one arena buffer from `allocate` (ModelWeights::arena; empty: host memory) every
// matrix of w that is either tiled here (with `tile`: each row-major matrix the CPU kernels can
// read tiled, tensor/tiled_layout.h, except the embedding) or owned (ModelWeights::owned: a
// conversion, a slice, W_UK^T), with its scales, and re-points the views; drops the owned
// matrices (a loaded model's `owned` is empty). With `bf16_dot` the tiled FP8 / BF16 matrices
// other than the router and the V3.2 indexer get MatmulArith::kBf16Dot, written straight in
// kTiledPairs where n_cols is even (the layout that arithmetic reads fastest).
// Layout of the arena: the matrices' data back to back in for_each_matrix's order (the order a
// forward pass reads them; bench/micro/cold_stream_bench, 10 expert matrices one after another on
// one thread, cold: 23.1 / 25.3 / 31.1 GB/s each in its own buffer, 30.2 / 29.6 / 33.3 back to
// back), 64-byte aligned, their scales after all of them.
// Work: the copies run as ~1 MiB chunks over `pool` (null: the calling thread), in that order; the
// pages of the mapped checkpoint a chunk has read are dropped from the process right after
// (madvise MADV_DONTNEED: a read-only private file mapping re-reads them from the file if ever
// touched again), so the peak resident memory is the arena plus the chunks in flight, not the
// arena plus the file. Memory of the dropped owned matrices goes back by malloc_trim.
// Preconditions: w's views are final (w.layers is not resized after); every view's data is either
// an owned matrix's data or a view of the mapped checkpoint.
// With cache.dir set (`--weight-cache`, weight_cache.h): an arena file of the same key there is
// mapped instead of placing anything (ModelWeights::arena_from_cache); else the arena is placed
// as above and then written there (a failed write is logged, not an error).
struct WeightCacheSpec {
  std::string dir;       // empty: no cache
  std::string identity;  // the checkpoint's (checkpoint_identity)
};
void place_weights(ModelWeights& w, bool tile, bool bf16_dot, const WeightAllocator& allocate,
                   ThreadPool* pool, const WeightCacheSpec& cache = {});

}  // namespace dss
