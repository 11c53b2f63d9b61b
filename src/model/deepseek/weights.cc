#include "model/deepseek/weights.h"

#include <cmath>
#include <cstring>
#include <map>

#include "base/check.h"
#include "base/str_cat.h"
#include "model/deepseek/weight_cache.h"
#include "model/deepseek/weight_placement.h"
#include "tensor/tiled_layout.h"

namespace dss {

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Rows [r0, r1) and columns [c0, c1) of a matrix (-1: to the end).
struct Part {
  int64_t r0 = 0, r1 = -1, c0 = 0, c1 = -1;
};

class Loader {
 public:
  Loader(const Checkpoint& ck, const QuantPolicy* convert, const QuantPolicy* lm_head_convert,
         bool tile, std::vector<OwnedMatrix>& owned)
      : ck_(ck), convert_(convert), lm_head_(lm_head_convert), tile_(tile), owned_(owned) {}

  // `tileable`: false for matrices read by row lookup (the embedding), which stay row-major.
  // `part`: the rows and columns this rank keeps (ShardSpec); the checks run on the whole tensor.
  Result<Matrix> matrix(const std::string& name, int64_t rows, int64_t cols, bool tileable = true,
                        const Part& part = {}) {
    DSS_ASSIGN_OR_RETURN(TensorView t, ck_.get(name));
    const std::vector<int64_t> want = {rows, cols};
    if (t.shape != want) {
      return Status::error(t.file, ": tensor '", name, "' has shape ", t.shape_str(), ", expected ",
                           shape_str(want));
    }
    Matrix m;
    m.dtype = t.dtype;
    m.n_rows = rows;
    m.n_cols = cols;
    m.data = t.data;
    if (t.dtype == DType::kF8E4M3) {
      const std::string sname = name + "_scale_inv";
      auto s = ck_.get(sname);
      if (!s)
        return Status::error(t.file, ": tensor '", name, "' is F8_E4M3 but its scale tensor '",
                             sname, "' is missing");
      const std::vector<int64_t> want_s = {m.n_scale_rows(), m.n_scale_cols()};
      if (s->dtype != DType::kF32) {
        return Status::error(s->file, ": tensor '", sname, "' has dtype ", dtype_name(s->dtype),
                             ", expected F32");
      }
      if (s->shape != want_s) {
        return Status::error(s->file, ": tensor '", sname, "' has shape ", s->shape_str(),
                             ", expected ", shape_str(want_s));
      }
      m.scales = reinterpret_cast<const float*>(s->data);
      // Scales are 1/16384 of the weights: cheap to check, and one NaN or Inf poisons a block.
      const int64_t n_scales = m.n_scale_rows() * m.n_scale_cols();
      for (int64_t i = 0; i < n_scales; ++i) {
        if (!std::isfinite(m.scales[i])) {
          return Status::error(s->file, ": tensor '", sname, "' element ", i, " is ", m.scales[i],
                               " (scales must be finite)");
        }
      }
    } else if (t.dtype == DType::kI8) {
      DSS_ASSIGN_OR_RETURN(m.scales, int8_scales(t, name, rows));
    } else if (t.dtype != DType::kBF16 && t.dtype != DType::kF32 && t.dtype != DType::kF16) {
      return Status::error(t.file, ": tensor '", name, "' has dtype ", dtype_name(t.dtype),
                           ", expected F8_E4M3, I8, BF16, F16 or F32");
    }
    m = slice(m, part.r0, part.r1 < 0 ? rows : part.r1, part.c0, part.c1 < 0 ? cols : part.c1);
    // --lm-head-dtype converts the output heads: lm_head and the MTP module's copy of it.
    const bool head = name == "lm_head.weight" || name.ends_with(".shared_head.head.weight");
    const QuantPolicy* policy = lm_head_ != nullptr && head ? lm_head_ : convert_;
    if (policy != nullptr && policy->converts(name, 2)) {
      owned_.push_back(convert_matrix(m, policy->to, policy->ue8m0));
      m = owned_.back().view();
    }
    Matrix stored = m;  // as it will be stored: place_weights tiles it after the views are built
    if (tile_ && tileable && can_tile(m)) stored.layout = WeightLayout::kTiled;
    count(m.dtype, stored.data_bytes());
    if (m.dtype == DType::kF8E4M3)
      count(DType::kF32, static_cast<size_t>(m.n_scale_rows() * m.n_scale_cols()) * 4);
    if (m.dtype == DType::kI8) count(DType::kF32, static_cast<size_t>(m.n_rows) * 4);
    return m;
  }

  // The per-output-channel scales of INT8 weight `name` (SGLang w8a8_int8 layout: F32
  // [rows, 1], finite and positive).
  Result<const float*> int8_scales(const TensorView& t, const std::string& name, int64_t rows) {
    const std::string sname = int8_scale_name(name);
    auto s = ck_.get(sname);
    if (!s)
      return Status::error(t.file, ": tensor '", name, "' is I8 but its scale tensor '", sname,
                           "' is missing");
    if (s->dtype != DType::kF32) {
      return Status::error(s->file, ": tensor '", sname, "' has dtype ", dtype_name(s->dtype),
                           ", expected F32");
    }
    if (s->shape != std::vector<int64_t>{rows, 1} && s->shape != std::vector<int64_t>{rows}) {
      return Status::error(s->file, ": tensor '", sname, "' has shape ", s->shape_str(),
                           ", expected [", rows, ", 1]");
    }
    const auto* v = reinterpret_cast<const float*>(s->data);
    for (int64_t r = 0; r < rows; ++r) {
      if (!std::isfinite(v[r]) || v[r] <= 0.0f) {
        return Status::error(s->file, ": tensor '", sname, "' row ", r, " has scale ", v[r],
                             " (must be finite and > 0)");
      }
    }
    return v;
  }

  Result<Vector> vector(const std::string& name, int64_t n) {
    DSS_ASSIGN_OR_RETURN(TensorView t, ck_.get(name));
    if (t.shape != std::vector<int64_t>{n}) {
      return Status::error(t.file, ": tensor '", name, "' has shape ", t.shape_str(),
                           ", expected [", n, "]");
    }
    if (t.dtype != DType::kBF16 && t.dtype != DType::kF32 && t.dtype != DType::kF16) {
      return Status::error(t.file, ": tensor '", name, "' has dtype ", dtype_name(t.dtype),
                           ", expected BF16, F16 or F32");
    }
    const Vector v{t.dtype, n, t.data};
    for (int64_t i = 0; i < n; ++i) {  // norm weights: small, and a NaN poisons every token
      if (!std::isfinite(v.at(i))) {
        return Status::error(t.file, ": tensor '", name, "' element ", i, " is ", v.at(i),
                             " (norm weights must be finite)");
      }
    }
    count(t.dtype, t.n_bytes);
    return v;
  }

  // A SwiGLU FFN; with `shard` its intermediate rows split (gate/up rows, down columns).
  Result<FfnWeights> ffn(const std::string& prefix, int64_t d_model, int64_t d_ff,
                         const ShardSpec& shard = {}) {
    const int64_t f0 = shard.begin(d_ff), f1 = shard.end(d_ff);
    FfnWeights f;
    DSS_ASSIGN_OR_RETURN(
        f.gate, matrix(prefix + ".gate_proj.weight", d_ff, d_model, true, Part{f0, f1, 0, -1}));
    DSS_ASSIGN_OR_RETURN(
        f.up, matrix(prefix + ".up_proj.weight", d_ff, d_model, true, Part{f0, f1, 0, -1}));
    DSS_ASSIGN_OR_RETURN(
        f.down, matrix(prefix + ".down_proj.weight", d_model, d_ff, true, Part{0, -1, f0, f1}));
    return f;
  }

  // m's rows [r0, r1) and columns [c0, c1) (m row-major, as read from the checkpoint): a view
  // where whole rows are kept (FP8: on whole 128-row scale blocks), else an owned copy in
  // m's dtype (FP8: when both ranges lie on the 128 x 128 scale grid, with its scale sub-grid),
  // or dequantised to F32 where an FP8 slice cuts a scale block (exact: code x scale).
  Matrix slice(const Matrix& m, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    if (r0 == 0 && r1 == m.n_rows && c0 == 0 && c1 == m.n_cols) return m;
    const int64_t B = kFp8BlockSize;
    const bool fp8 = m.dtype == DType::kF8E4M3, i8 = m.dtype == DType::kI8;
    auto on_grid = [&](int64_t b, int64_t e, int64_t n) {
      return b % B == 0 && (e % B == 0 || e == n);
    };
    const auto es = static_cast<int64_t>(dtype_size(m.dtype));
    const auto* src = static_cast<const uint8_t*>(m.data);
    if (c0 == 0 && c1 == m.n_cols && (!fp8 || on_grid(r0, r1, m.n_rows))) {
      Matrix v = m;
      v.n_rows = r1 - r0;
      v.data = src + r0 * m.n_cols * es;
      if (fp8) v.scales = m.scales + (r0 / B) * m.n_scale_cols();
      if (i8) v.scales = m.scales + r0;
      return v;
    }
    const bool keep = !fp8 || (on_grid(r0, r1, m.n_rows) && on_grid(c0, c1, m.n_cols));
    OwnedMatrix o;
    o.dtype = keep ? m.dtype : DType::kF32;
    o.n_rows = r1 - r0;
    o.n_cols = c1 - c0;
    const auto oes = static_cast<int64_t>(dtype_size(o.dtype));
    o.data.resize(static_cast<size_t>(o.n_rows * o.n_cols * oes));
    for (int64_t r = r0; r < r1; ++r) {
      uint8_t* dst = o.data.data() + (r - r0) * o.n_cols * oes;
      if (keep) {
        std::memcpy(dst, src + (r * m.n_cols + c0) * es, static_cast<size_t>(o.n_cols * es));
        continue;
      }
      for (int64_t c = c0; c < c1; ++c) {
        const float v = m.at(r, c);
        std::memcpy(dst + (c - c0) * oes, &v, sizeof(v));
      }
    }
    if (keep && fp8) {
      const int64_t sr0 = r0 / B, sr1 = (r1 + B - 1) / B, sc0 = c0 / B, sc1 = (c1 + B - 1) / B;
      for (int64_t i = sr0; i < sr1; ++i)
        for (int64_t j = sc0; j < sc1; ++j) o.scales.push_back(m.scales[i * m.n_scale_cols() + j]);
    }
    if (keep && i8) o.scales.assign(m.scales + r0, m.scales + r1);
    owned_.push_back(std::move(o));
    return owned_.back().view();
  }

  std::vector<std::pair<std::string, size_t>> bytes() const {
    std::vector<std::pair<std::string, size_t>> out;
    for (const auto& [k, v] : bytes_) out.emplace_back(k, v);
    return out;
  }

 private:
  void count(DType t, size_t n) { bytes_[std::string(dtype_name(t))] += n; }
  const Checkpoint& ck_;
  const QuantPolicy* convert_;
  const QuantPolicy* lm_head_;
  bool tile_;
  std::vector<OwnedMatrix>& owned_;
  std::map<std::string, size_t> bytes_;
};

// MlaWeights::w_uk_t from kv_b [H (d_nope + d_v), R] (row-major or tiled).
OwnedMatrix transpose_uk(const Matrix& kv_b, int64_t H, int64_t d_nope, int64_t d_v) {
  const int64_t R = kv_b.n_cols, d_kv = d_nope + d_v, B = kFp8BlockSize;
  // FP8 stays FP8 when the transposed matrix has a block grid: head h's W_UK rows in one row
  // block of kv_b (their scales per column block c / B become the scales of the new row blocks
  // (h R + c) / B, R a multiple of B) and d_nope <= B (one column block).
  bool fp8 = kv_b.dtype == DType::kF8E4M3 && d_nope <= B && R % B == 0;
  for (int64_t h = 0; fp8 && h < H; ++h) fp8 = (h * d_kv) / B == (h * d_kv + d_nope - 1) / B;
  const bool same =
      fp8 || kv_b.dtype == DType::kBF16 || kv_b.dtype == DType::kF16 || kv_b.dtype == DType::kF32;
  OwnedMatrix t;
  t.dtype = same ? kv_b.dtype : DType::kF32;
  t.n_rows = H * R;
  t.n_cols = d_nope;
  const size_t es = dtype_size(t.dtype);
  t.data.resize(static_cast<size_t>(t.n_rows * t.n_cols) * es);
  const auto* src = static_cast<const uint8_t*>(kv_b.data);
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t c = 0; c < R; ++c) {
      for (int64_t j = 0; j < d_nope; ++j) {
        uint8_t* dst = t.data.data() + static_cast<size_t>((h * R + c) * d_nope + j) * es;
        if (same) {
          std::memcpy(dst, src + static_cast<size_t>(kv_b.element_index(h * d_kv + j, c)) * es, es);
        } else {
          const float v = kv_b.at(h * d_kv + j, c);
          std::memcpy(dst, &v, sizeof(v));
        }
      }
    }
  }
  if (fp8) {
    t.scales.resize(static_cast<size_t>(t.n_rows / B));  // [H R / B, 1]
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t cb = 0; cb < R / B; ++cb)
        t.scales[static_cast<size_t>(h * (R / B) + cb)] =
            kv_b.scales[(h * d_kv) / B * kv_b.n_scale_cols() + cb];
    }
  }
  return t;
}

// One layer's attention (prefix "model.layers.N.self_attn"): this shard's heads of q_b, kv_b and
// o, W_UK^T derived from them (into `owned`), the rest whole.
Status load_mla(Loader& ld, const ModelConfig& c, const std::string& sa, const ShardSpec& shard,
                std::vector<OwnedMatrix>& owned, MlaWeights& a) {
  const int64_t H = c.n_heads / shard.size, h0 = shard.begin(c.n_heads);
  const Part q_heads{h0 * c.d_qk(), (h0 + H) * c.d_qk(), 0, -1};
  const Part kv_heads{h0 * (c.d_nope + c.d_v), (h0 + H) * (c.d_nope + c.d_v), 0, -1};
  const Part o_heads{0, -1, h0 * c.d_v, (h0 + H) * c.d_v};
  DSS_ASSIGN_OR_RETURN(a.q_a, ld.matrix(sa + ".q_a_proj.weight", c.q_lora_rank, c.d_model));
  DSS_ASSIGN_OR_RETURN(a.q_a_norm, ld.vector(sa + ".q_a_layernorm.weight", c.q_lora_rank));
  a.n_heads = static_cast<int32_t>(H);
  DSS_ASSIGN_OR_RETURN(a.q_b, ld.matrix(sa + ".q_b_proj.weight", c.n_heads * c.d_qk(),
                                        c.q_lora_rank, true, q_heads));
  DSS_ASSIGN_OR_RETURN(
      a.kv_a, ld.matrix(sa + ".kv_a_proj_with_mqa.weight", c.kv_lora_rank + c.d_rope, c.d_model));
  DSS_ASSIGN_OR_RETURN(a.kv_a_norm, ld.vector(sa + ".kv_a_layernorm.weight", c.kv_lora_rank));
  DSS_ASSIGN_OR_RETURN(a.kv_b, ld.matrix(sa + ".kv_b_proj.weight", c.n_heads * (c.d_nope + c.d_v),
                                         c.kv_lora_rank, true, kv_heads));
  DSS_ASSIGN_OR_RETURN(
      a.o, ld.matrix(sa + ".o_proj.weight", c.d_model, c.n_heads * c.d_v, true, o_heads));
  owned.push_back(transpose_uk(a.kv_b, H, c.d_nope, c.d_v));  // tiled by place_weights
  a.w_uk_t = owned.back().view();
  if (c.arch == ModelArch::kDeepseekV32) {
    const std::string ix = sa + ".indexer";
    IndexerWeights& iw = a.indexer;
    a.has_indexer = true;
    DSS_ASSIGN_OR_RETURN(
        iw.wq_b,
        ld.matrix(ix + ".wq_b.weight", static_cast<int64_t>(c.index_n_heads) * c.index_head_dim,
                  c.q_lora_rank));
    DSS_ASSIGN_OR_RETURN(iw.wk, ld.matrix(ix + ".wk.weight", c.index_head_dim, c.d_model));
    DSS_ASSIGN_OR_RETURN(iw.weights_proj,
                         ld.matrix(ix + ".weights_proj.weight", c.index_n_heads, c.d_model));
    DSS_ASSIGN_OR_RETURN(Vector kw, ld.vector(ix + ".k_norm.weight", c.index_head_dim));
    DSS_ASSIGN_OR_RETURN(Vector kb, ld.vector(ix + ".k_norm.bias", c.index_head_dim));
    for (int64_t j = 0; j < c.index_head_dim; ++j) {
      iw.k_norm_w.push_back(kw.at(j));
      iw.k_norm_b.push_back(kb.at(j));
    }
  }
  return Status::ok();
}

// One MoE layer (prefix "model.layers.N.mlp"): the router whole; the routed experts this shard
// holds (expert parallel: whole experts [e0, e1), the others left empty; else every expert's rows
// split); the shared expert's rows split.
Status load_moe(Loader& ld, const ModelConfig& c, const std::string& mlp, const ShardSpec& shard,
                MoeWeights& m) {
  const int64_t e0 = shard.expert_parallel ? shard.begin(c.n_experts) : 0;
  const int64_t e1 = shard.expert_parallel ? shard.end(c.n_experts) : c.n_experts;
  const ShardSpec expert_split = shard.expert_parallel ? ShardSpec{} : shard;
  const ShardSpec shared_split = shard.dense();
  DSS_ASSIGN_OR_RETURN(m.router, ld.matrix(mlp + ".gate.weight", c.n_experts, c.d_model));
  const std::string bname = mlp + ".gate.e_score_correction_bias";
  DSS_ASSIGN_OR_RETURN(Vector bias, ld.vector(bname, c.n_experts));
  m.router_bias.resize(static_cast<size_t>(c.n_experts));
  for (int64_t e = 0; e < c.n_experts; ++e) m.router_bias[static_cast<size_t>(e)] = bias.at(e);
  m.experts.resize(static_cast<size_t>(c.n_experts));  // EP: empty outside [e0, e1)
  m.expert_begin = static_cast<int32_t>(e0);
  m.expert_end = static_cast<int32_t>(e1);
  for (int64_t e = e0; e < e1; ++e) {
    DSS_ASSIGN_OR_RETURN(
        m.experts[static_cast<size_t>(e)],
        ld.ffn(mlp + ".experts." + std::to_string(e), c.d_model, c.d_ff_expert, expert_split));
  }
  if (c.n_shared_experts > 0) {
    m.has_shared = true;
    DSS_ASSIGN_OR_RETURN(
        m.shared, ld.ffn(mlp + ".shared_experts", c.d_model,
                         static_cast<int64_t>(c.n_shared_experts) * c.d_ff_expert, shared_split));
  }
  return Status::ok();
}

// Decoder layer i (prefix "model.layers.i"): norms, attention, dense FFN or MoE.
Result<LayerWeights> load_layer(Loader& ld, const ModelConfig& c, int32_t i, const ShardSpec& shard,
                                std::vector<OwnedMatrix>& owned) {
  const std::string p = "model.layers." + std::to_string(i);
  LayerWeights L;
  DSS_ASSIGN_OR_RETURN(L.attn_norm, ld.vector(p + ".input_layernorm.weight", c.d_model));
  DSS_ASSIGN_OR_RETURN(L.ffn_norm, ld.vector(p + ".post_attention_layernorm.weight", c.d_model));
  DSS_RETURN_IF_ERROR(load_mla(ld, c, p + ".self_attn", shard.dense(), owned, L.mla));
  L.is_moe = c.is_moe_layer(i);
  if (!L.is_moe) {
    DSS_ASSIGN_OR_RETURN(L.dense, ld.ffn(p + ".mlp", c.d_model, c.d_ff, shard.dense()));
  } else {
    DSS_RETURN_IF_ERROR(load_moe(ld, c, p + ".mlp", shard, L.moe));
  }
  return L;
}

// The MTP module: layer n_layers's decoder block and its enorm, hnorm, eh_proj, embedding and
// shared head.
Result<MtpWeights> load_mtp(Loader& ld, const Checkpoint& ck, const ModelConfig& c,
                            std::vector<OwnedMatrix>& owned) {
  if (c.n_mtp_layers < 1) {
    return Status::error(ck.dir(),
                         ": config.json has num_nextn_predict_layers 0: the checkpoint has no "
                         "MTP module for --speculative-algorithm NEXTN");
  }
  const std::string p = "model.layers." + std::to_string(c.n_layers);
  MtpWeights m;
  DSS_ASSIGN_OR_RETURN(m.block, load_layer(ld, c, c.n_layers, {}, owned));
  DSS_ASSIGN_OR_RETURN(m.enorm, ld.vector(p + ".enorm.weight", c.d_model));
  DSS_ASSIGN_OR_RETURN(m.hnorm, ld.vector(p + ".hnorm.weight", c.d_model));
  DSS_ASSIGN_OR_RETURN(m.eh_proj, ld.matrix(p + ".eh_proj.weight", c.d_model, 2 * c.d_model));
  DSS_ASSIGN_OR_RETURN(m.embed, ld.matrix(p + ".embed_tokens.weight", c.n_vocab, c.d_model, false));
  DSS_ASSIGN_OR_RETURN(m.head_norm, ld.vector(p + ".shared_head.norm.weight", c.d_model));
  DSS_ASSIGN_OR_RETURN(m.head, ld.matrix(p + ".shared_head.head.weight", c.n_vocab, c.d_model));
  if (m.embed.dtype == DType::kF8E4M3) {
    return Status::error(ck.dir(), ": tensor '", p,
                         ".embed_tokens.weight' is F8_E4M3; embeddings must be BF16, F16 or F32");
  }
  return m;
}

}  // namespace

Result<ModelWeights> load_weights(const Checkpoint& ck, const ModelConfig& c,
                                  const QuantPolicy* convert, bool tile,
                                  const QuantPolicy* lm_head_convert, bool bf16_dot,
                                  const WeightAllocator& allocate, const ShardSpec& shard,
                                  ThreadPool* pool, bool mtp, const std::string& cache_dir) {
  DSS_RETURN_IF_ERROR(check_shardable(c, shard));
  if (mtp && shard.sharded())
    return Status::error("the MTP module (--speculative-algorithm NEXTN) runs on one rank only");
  ModelWeights w;
  Loader ld(ck, convert, lm_head_convert, tile, w.owned);
  const Part vocab{shard.dense().begin(c.n_vocab), shard.dense().end(c.n_vocab), 0, -1};
  w.vocab_begin = vocab.r0;
  DSS_ASSIGN_OR_RETURN(w.embed,
                       ld.matrix("model.embed_tokens.weight", c.n_vocab, c.d_model, false, vocab));
  DSS_ASSIGN_OR_RETURN(w.final_norm, ld.vector("model.norm.weight", c.d_model));
  DSS_ASSIGN_OR_RETURN(w.lm_head, ld.matrix("lm_head.weight", c.n_vocab, c.d_model, true, vocab));
  if (w.embed.dtype == DType::kF8E4M3) {
    return Status::error(
        ck.dir(),
        ": tensor 'model.embed_tokens.weight' is F8_E4M3; embeddings must be BF16, F16 or F32");
  }
  for (int32_t i = 0; i < c.n_layers; ++i) {
    DSS_ASSIGN_OR_RETURN(LayerWeights L, load_layer(ld, c, i, shard, w.owned));
    w.layers.push_back(std::move(L));
  }
  if (mtp) {
    DSS_ASSIGN_OR_RETURN(MtpWeights m, load_mtp(ld, ck, c, w.owned));
    w.mtp.push_back(std::move(m));
  }
  w.bytes_by_dtype = ld.bytes();
  WeightCacheSpec cache;
  // The shard is part of the key: the ranks of a tensor-parallel group place arenas of the same
  // layout with different slices.
  if (!cache_dir.empty()) {
    cache = {cache_dir, str_cat(checkpoint_identity(ck.dir()), "\nshard ", shard.rank, "/",
                                shard.size, shard.expert_parallel ? " ep" : "",
                                shard.dp_attention ? " dp-attention" : "")};
  }
  place_weights(w, tile, bf16_dot, allocate, pool, cache);
  return w;
}

}  // namespace dss
