#include "model/deepseek/weight_placement.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <set>

#include "base/check.h"
#include "base/log.h"
#include "base/str_cat.h"
#include "model/deepseek/weight_cache.h"
#include "tensor/tiled_layout.h"

namespace dss {

namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;  // the output of one unit of work

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

// One matrix's move: read from `src` (row-major: the mapping or an owned copy), written as `dst`.
struct Placement {
  Matrix src, dst;
  bool tiled = false;   // repacked into dst.layout; else copied as it is
  bool mapped = false;  // src.data is in the mapped checkpoint: released once read
  size_t data_off = 0, scales_off = 0, n_scales = 0;
  int64_t n_units = 0, units_per_chunk = 1;  // tiles (tiled) or rows (copied)
};

// A chunk of work: units [u0, u1) of placement i.
struct Chunk {
  size_t i;
  int64_t u0, u1;
};

// The float32 scales a matrix of this dtype and shape carries (FP8: the block grid; I8: a row).
size_t n_scales(const Matrix& m) {
  if (m.scales == nullptr) return 0;
  if (m.dtype == DType::kF8E4M3) return static_cast<size_t>(m.n_scale_rows() * m.n_scale_cols());
  if (m.dtype == DType::kI8) return static_cast<size_t>(m.n_rows);
  return 0;
}

// The router and the V3.2 indexer: kept in f32 arithmetic under bf16_dot.
std::set<const Matrix*> f32_only(ModelWeights& w) {
  std::set<const Matrix*> out;
  auto layer = [&out](const LayerWeights& L) {
    if (L.is_moe) out.insert(&L.moe.router);
    if (L.mla.has_indexer) {
      for (const Matrix* m : {&L.mla.indexer.wk, &L.mla.indexer.wq_b, &L.mla.indexer.weights_proj})
        out.insert(m);
    }
  };
  for (const LayerWeights& L : w.layers) layer(L);
  for (const MtpWeights& m : w.mtp) layer(m.block);
  return out;
}

// Drops the whole pages inside [p, p + n) from the process (a mapped, read-only file range).
void release_mapped(const void* p, size_t n) {
  static const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto b = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const auto e = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (e > b) madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);  // advice: errors ignored
}

void run_chunk(const Placement& p, const Chunk& c, uint8_t* arena) {
  const size_t es = dtype_size(p.src.dtype);
  const size_t row_bytes = static_cast<size_t>(p.src.n_cols) * es;
  const auto* src = static_cast<const uint8_t*>(p.src.data);
  int64_t r0 = c.u0, r1 = c.u1;
  if (p.tiled) {
    tile_rows_into(p.src, p.dst.layout, c.u0, c.u1, arena + p.data_off);
    r0 = c.u0 * kTileRows;
    r1 = std::min(c.u1 * kTileRows, p.src.n_rows);
  } else {
    std::memcpy(arena + p.data_off + static_cast<size_t>(r0) * row_bytes,
                src + static_cast<size_t>(r0) * row_bytes,
                static_cast<size_t>(r1 - r0) * row_bytes);
  }
  if (p.mapped)
    release_mapped(src + static_cast<size_t>(r0) * row_bytes,
                   static_cast<size_t>(r1 - r0) * row_bytes);
}

// What each matrix of w becomes (for_each_matrix order, one entry per distinct data), with its
// place in an arena of the returned size.
std::vector<Placement> plan(ModelWeights& w, bool tile, bool bf16_dot,
                            std::map<const void*, size_t>& by_data, size_t& total) {
  std::set<const void*> owned;
  for (const OwnedMatrix& o : w.owned) owned.insert(o.data.data());
  const std::set<const Matrix*> keep_f32 = f32_only(w);
  std::vector<Placement> out;
  for_each_matrix(w, [&](Matrix& m) {
    if (m.empty() || by_data.count(m.data) != 0) return;  // EP's absent experts; a second view
    const bool is_owned = owned.count(m.data) != 0;
    const bool tiled =
        tile && &m != &w.embed && (w.mtp.empty() || &m != &w.mtp[0].embed) && can_tile(m);
    if (!tiled && !is_owned) return;  // stays a view of the mapping
    Placement p;
    p.src = p.dst = m;
    p.tiled = tiled;
    p.mapped = !is_owned;
    if (tiled) {
      p.dst.layout = WeightLayout::kTiled;
      if (bf16_dot && keep_f32.count(&m) == 0 &&
          (m.dtype == DType::kF8E4M3 || m.dtype == DType::kBF16)) {
        p.dst.arith = MatmulArith::kBf16Dot;
        if (can_tile(m, WeightLayout::kTiledPairs)) p.dst.layout = WeightLayout::kTiledPairs;
      }
    }
    p.n_scales = n_scales(m);
    const size_t unit_bytes =
        static_cast<size_t>((tiled ? kTileRows : 1) * m.n_cols) * dtype_size(m.dtype);
    p.n_units = tiled ? (m.n_rows + kTileRows - 1) / kTileRows : m.n_rows;
    p.units_per_chunk = static_cast<int64_t>(std::max<size_t>(1, kChunkBytes / unit_bytes));
    by_data[m.data] = out.size();
    out.push_back(p);
  });
  size_t off = 0;
  for (Placement& p : out) {
    p.data_off = off;
    off += align64(p.dst.data_bytes());
  }
  for (Placement& p : out) {
    p.scales_off = off;
    off += align64(p.n_scales * sizeof(float));
  }
  total = off;
  return out;
}

// The cache key of an arena laid out as `placed` for the checkpoint `identity`.
uint64_t arena_key(const std::vector<Placement>& placed, size_t total,
                   const std::string& identity) {
  uint64_t h = fnv1a("dsserve weight arena v1|" + identity);
  for (const Placement& p : placed) {
    h = fnv1a(str_cat(static_cast<int>(p.dst.dtype), ",", p.dst.n_rows, ",", p.dst.n_cols, ",",
                      static_cast<int>(p.dst.layout), ",", static_cast<int>(p.dst.arith), ",",
                      p.data_off, ",", p.scales_off, ",", p.n_scales, ";"),
              h);
  }
  return fnv1a(str_cat(total), h);
}

}  // namespace

void place_weights(ModelWeights& w, bool tile, bool bf16_dot, const WeightAllocator& allocate,
                   ThreadPool* pool, const WeightCacheSpec& cache) {
  std::map<const void*, size_t> by_data;  // a view's data before -> its placement
  size_t total = 0;
  std::vector<Placement> placed = plan(w, tile, bf16_dot, by_data, total);
  std::string cache_path;
  if (!cache.dir.empty() && total > 0) {
    cache_path = weight_cache_path(cache.dir, arena_key(placed, total, cache.identity));
    if (std::optional<Buffer> mapped = map_weight_cache(cache_path, total)) {
      w.arena = std::move(*mapped);
      w.arena_from_cache = true;
    }
  }
  if (!w.arena_from_cache) w.arena = allocate ? allocate(total) : Buffer::host(total);
  DSS_CHECK(w.arena.space() == MemorySpace::kHost, "weights are placed on the host");
  uint8_t* arena = w.arena.data();
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < placed.size(); ++i) {
    Placement& p = placed[i];
    for (int64_t u = 0; u < p.n_units; u += p.units_per_chunk)
      chunks.push_back({i, u, std::min(u + p.units_per_chunk, p.n_units)});
    if (p.n_scales > 0) {
      auto* sc = reinterpret_cast<float*>(arena + p.scales_off);
      if (!w.arena_from_cache) std::memcpy(sc, p.src.scales, p.n_scales * sizeof(float));
      p.dst.scales = sc;
    }
    p.dst.data = arena + p.data_off;
  }
  if (w.arena_from_cache) chunks.clear();  // the mapped file holds every copy already
  auto run = [&](int64_t b, int64_t e, int32_t) {
    for (int64_t k = b; k < e; ++k) {
      const Chunk& c = chunks[static_cast<size_t>(k)];
      run_chunk(placed[c.i], c, arena);
    }
  };
  if (pool != nullptr) {
    pool->parallel_for(static_cast<int64_t>(chunks.size()), 1, run);
  } else {
    run(0, static_cast<int64_t>(chunks.size()), 0);
  }
  for_each_matrix(w, [&](Matrix& m) {
    const auto it = by_data.find(m.data);
    if (m.empty() || it == by_data.end()) return;
    const Placement& p = placed[it->second];
    DSS_CHECK(m.dtype == p.src.dtype && m.n_rows == p.src.n_rows && m.n_cols == p.src.n_cols &&
                  m.layout == p.src.layout && m.scales == p.src.scales,
              "place_weights: two views of one matrix's data differ");
    m = p.dst;
  });
  w.owned.clear();
  // The freed buffers below glibc's (adaptive) mmap threshold sit in the heap; hand their pages
  // back (else the process keeps them as resident memory).
  malloc_trim(0);
  if (!cache_path.empty() && !w.arena_from_cache) {
    if (Status s = write_weight_cache(cache_path, w.arena); !s)
      log_warn("--weight-cache: ", s.message(), "; the next load repacks again");
  }
}

}  // namespace dss
