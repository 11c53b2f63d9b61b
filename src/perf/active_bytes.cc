#include "perf/active_bytes.h"

#include <algorithm>

namespace dss::perf {

int64_t matrix_bytes(const Matrix& m) {
  if (m.empty()) return 0;
  // The checkpoint's bytes: a tiled copy's zero padding rows (tensor/matrix.h) are not counted.
  int64_t b = m.n_rows * m.n_cols * static_cast<int64_t>(dtype_size(m.dtype));
  if (m.dtype == DType::kF8E4M3) b += m.n_scale_rows() * m.n_scale_cols() * 4;
  if (m.dtype == DType::kI8) b += m.n_rows * 4;
  return b;
}

namespace {

int64_t vector_bytes(const Vector& v) {
  return v.data ? v.n * static_cast<int64_t>(dtype_size(v.dtype)) : 0;
}

int64_t ffn_bytes(const FfnWeights& f) {
  return matrix_bytes(f.gate) + matrix_bytes(f.up) + matrix_bytes(f.down);
}

// One row of the embedding as stored: [d_model] values (+ the row's scales for FP8 / I8).
int64_t embed_row_bytes(const Matrix& e) {
  int64_t b = e.n_cols * static_cast<int64_t>(dtype_size(e.dtype));
  if (e.dtype == DType::kF8E4M3) b += e.n_scale_cols() * 4;
  if (e.dtype == DType::kI8) b += 4;
  return b;
}

}  // namespace

ActiveBytes active_bytes_per_token(const ModelWeights& w, int32_t n_experts_per_tok) {
  int64_t attn = 0, indexer = 0, dense = 0, router = 0, shared = 0, routed = 0, norms = 0;
  ActiveBytes r;
  for (const LayerWeights& l : w.layers) {
    const MlaWeights& a = l.mla;
    norms += vector_bytes(l.attn_norm) + vector_bytes(l.ffn_norm);
    attn += matrix_bytes(a.q_a) + vector_bytes(a.q_a_norm) + matrix_bytes(a.q_b) +
            matrix_bytes(a.kv_a) + vector_bytes(a.kv_a_norm) + matrix_bytes(a.kv_b) +
            matrix_bytes(a.o);
    if (a.has_indexer) {
      const IndexerWeights& x = a.indexer;
      indexer += matrix_bytes(x.wq_b) + matrix_bytes(x.wk) + matrix_bytes(x.weights_proj) +
                 static_cast<int64_t>((x.k_norm_w.size() + x.k_norm_b.size()) * sizeof(float));
    }
    if (!l.is_moe) {
      dense += ffn_bytes(l.dense);
      continue;
    }
    router +=
        matrix_bytes(l.moe.router) + static_cast<int64_t>(l.moe.router_bias.size() * sizeof(float));
    if (l.moe.has_shared) shared += ffn_bytes(l.moe.shared);
    // Every routed expert has the same shape: k of them are read per token (expert parallel:
    // the held share of them, on average).
    if (!l.moe.experts.empty()) {
      const auto n_experts = static_cast<int64_t>(l.moe.experts.size());
      const int64_t e0 = l.moe.expert_begin, e1 = std::min<int64_t>(l.moe.expert_end, n_experts);
      r.routed_expert_bytes = ffn_bytes(l.moe.experts[static_cast<size_t>(e0)]);
      routed += n_experts_per_tok * r.routed_expert_bytes * (e1 - e0) / n_experts;
      r.experts_partitioned = e1 - e0 < n_experts;
      ++r.n_moe_layers;
    }
  }
  norms += vector_bytes(w.final_norm);
  r.parts = {{"embedding", embed_row_bytes(w.embed)},
             {"attention", attn},
             {"indexer", indexer},
             {"dense_ffn", dense},
             {"router", router},
             {"shared_experts", shared},
             {"routed_experts", routed},
             {"norms", norms},
             {"lm_head", matrix_bytes(w.lm_head)}};
  for (const auto& p : r.parts) r.total += p.second;
  r.routed_bytes = routed;
  return r;
}

double ActiveBytes::step_bytes(double routed_reads) const {
  return static_cast<double>(total - routed_bytes) +
         routed_reads * static_cast<double>(routed_expert_bytes);
}

std::vector<std::pair<std::string, double>> ActiveBytes::step_parts(double routed_reads) const {
  std::vector<std::pair<std::string, double>> r;
  for (const auto& [part, b] : parts) {
    r.emplace_back(part, part == "routed_experts"
                             ? routed_reads * static_cast<double>(routed_expert_bytes)
                             : static_cast<double>(b));
  }
  return r;
}

}  // namespace dss::perf
