#include "model/deepseek/convert_checkpoint.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "io/checkpoint.h"
#include "io/json.h"
#include "io/model_config.h"
#include "io/safetensors_writer.h"
#include "tensor/quantize.h"

namespace dss {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The Matrix view of a 2-D checkpoint tensor with its scales (FP8 block grid, INT8 per row).
Result<Matrix> matrix_of(const Checkpoint& ck, const TensorView& t) {
  Matrix m{t.dtype, t.shape[0], t.shape[1], t.data, nullptr};
  if (t.dtype == DType::kF8E4M3 || t.dtype == DType::kI8) {
    const bool fp8 = t.dtype == DType::kF8E4M3;
    const std::string sname = fp8 ? fp8_scale_name(t.name) : int8_scale_name(t.name);
    DSS_ASSIGN_OR_RETURN(TensorView s, ck.get(sname));
    const int64_t want = fp8 ? m.n_scale_rows() * m.n_scale_cols() : m.n_rows;
    if (s.dtype != DType::kF32 || s.numel() != want) {
      return Status::error(s.file, ": scale tensor '", sname, "' has dtype ", dtype_name(s.dtype),
                           " and shape ", s.shape_str(), ", expected F32 with ", want, " values");
    }
    m.scales = reinterpret_cast<const float*>(s.data);
  }
  return m;
}

// One output tensor: where its bytes come from.
struct OutTensor {
  SafetensorsLayout layout;
  std::string source;  // input tensor name
  enum Kind { kCopy, kData, kScales } kind = kCopy;
};

class Converter {
 public:
  Converter(const ConvertOptions& o, const Checkpoint& ck) : o_(o), ck_(ck) {}

  // Output tensors of one input file. Scale tensors travel with their weight.
  Result<std::vector<OutTensor>> plan_file(const SafetensorsFile& f) {
    std::vector<OutTensor> out;
    for (const std::string& name : f.names()) {
      if (is_scale(name)) continue;
      DSS_ASSIGN_OR_RETURN(TensorView t, f.get(name));
      const bool convert =
          o_.policy.converts(name, t.shape.size()) && t.dtype != o_.policy.to &&
          (t.dtype == DType::kF8E4M3 || t.dtype == DType::kI8 || t.dtype == DType::kBF16 ||
           t.dtype == DType::kF16 || t.dtype == DType::kF32);
      const DType dt = convert ? o_.policy.to : t.dtype;
      out.push_back({{name, dt, t.shape}, name, convert ? OutTensor::kData : OutTensor::kCopy});
      if (dt == DType::kF8E4M3) {
        const int64_t br = (t.shape[0] + 127) / 128, bc = (t.shape[1] + 127) / 128;
        out.push_back({{fp8_scale_name(name), DType::kF32, {br, bc}},
                       name,
                       convert ? OutTensor::kScales : OutTensor::kCopy});
        if (!convert) out.back().source = fp8_scale_name(name);
      }
      if (dt == DType::kI8) {
        out.push_back({{int8_scale_name(name), DType::kF32, {t.shape[0], 1}},
                       name,
                       convert ? OutTensor::kScales : OutTensor::kCopy});
        if (!convert) out.back().source = int8_scale_name(name);
      }
      n_out_[dt]++;
    }
    return out;
  }

  Result<std::vector<uint8_t>> bytes(const OutTensor& t) {
    DSS_ASSIGN_OR_RETURN(TensorView src, ck_.get(t.source));
    if (t.kind == OutTensor::kCopy) return std::vector<uint8_t>(src.data, src.data + src.n_bytes);
    DSS_ASSIGN_OR_RETURN(Matrix m, matrix_of(ck_, src));
    // NOTE: the scales and the codes of one weight are converted separately (the file order puts
    // all F32 tensors first); the conversion is deterministic, so they match.
    OwnedMatrix c = convert_matrix(m, o_.policy.to, o_.policy.ue8m0);
    if (t.kind == OutTensor::kData) return std::move(c.data);
    std::vector<uint8_t> out(c.scales.size() * 4);
    std::memcpy(out.data(), c.scales.data(), out.size());
    return out;
  }

  const std::map<DType, int64_t>& n_out() const { return n_out_; }

 private:
  // A `*_scale_inv` of an F8 weight or a `*_scale` of an I8 weight present in the checkpoint.
  bool is_scale(const std::string& name) const {
    for (const auto& [suffix, dt] : {std::pair<std::string, DType>{"_scale_inv", DType::kF8E4M3},
                                     std::pair<std::string, DType>{"_scale", DType::kI8}}) {
      if (!ends_with(name, suffix)) continue;
      auto w = ck_.get(name.substr(0, name.size() - suffix.size()));
      if (w && w->dtype == dt) return true;
    }
    return false;
  }

  const ConvertOptions& o_;
  const Checkpoint& ck_;
  std::map<DType, int64_t> n_out_;
};

// config.json with the quantization_config of what was written.
Json output_config(Json cfg, const std::map<DType, int64_t>& n_out, const QuantPolicy& p) {
  const bool any_fp8 = n_out.count(DType::kF8E4M3) != 0, any_int8 = n_out.count(DType::kI8) != 0;
  if (any_int8 && (p.to == DType::kI8 || !any_fp8)) {
    cfg["quantization_config"] = {
        {"quant_method", "w8a8_int8"}, {"activation_scheme", "dynamic"}, {"ignore", p.exclude}};
  } else if (any_fp8) {
    Json q = cfg.value("quantization_config", Json::object());
    if (q.value("quant_method", "") != "fp8") {
      q = {{"activation_scheme", "dynamic"},
           {"fmt", "e4m3"},
           {"quant_method", "fp8"},
           {"weight_block_size", {128, 128}}};
    }
    if (p.ue8m0) q["scale_fmt"] = "ue8m0";
    cfg["quantization_config"] = q;
  } else {
    cfg.erase("quantization_config");
  }
  return cfg;
}

}  // namespace

Status convert_checkpoint(const ConvertOptions& o_in) {
  ConvertOptions o = o_in;
  std::error_code ec;
  if (fs::exists(o.out_dir, ec) && fs::equivalent(o.in_dir, o.out_dir, ec))
    return Status::error(o.out_dir, ": output directory is the input directory");
  const std::string cfg_path = (fs::path(o.in_dir) / "config.json").string();
  DSS_ASSIGN_OR_RETURN(Json cfg_json, load_json_file(cfg_path));
  DSS_ASSIGN_OR_RETURN(ModelConfig cfg, ModelConfig::from_hf_json(cfg_json, cfg_path));
  o.policy.ue8m0 = cfg.quant.ue8m0 || cfg.arch == ModelArch::kDeepseekV32;
  DSS_ASSIGN_OR_RETURN(Checkpoint ck, Checkpoint::open(o.in_dir));
  fs::create_directories(o.out_dir, ec);
  if (ec) return Status::error(o.out_dir, ": cannot create: ", ec.message());

  Converter conv(o, ck);
  std::vector<std::pair<std::string, std::vector<OutTensor>>> files;
  int64_t total = 0;
  for (const auto& f : ck.files()) {
    DSS_ASSIGN_OR_RETURN(std::vector<OutTensor> plan, conv.plan_file(*f));
    for (const auto& t : plan) {
      int64_t n = static_cast<int64_t>(dtype_size(t.layout.dtype));
      for (int64_t d : t.layout.shape) n *= d;
      total += n;
    }
    files.emplace_back(fs::path(f->path()).filename().string(), std::move(plan));
  }
  int64_t done = 0;
  std::map<std::string, std::string> weight_map;
  for (auto& [file_name, plan] : files) {
    std::map<std::string, const OutTensor*> by_name;
    std::vector<SafetensorsLayout> layout;
    for (const auto& t : plan) {
      by_name[t.layout.name] = &t;
      layout.push_back(t.layout);
      weight_map[t.layout.name] = file_name;
    }
    DSS_RETURN_IF_ERROR(write_safetensors_streamed(
        (fs::path(o.out_dir) / file_name).string(), std::move(layout),
        [&](const SafetensorsLayout& l) -> Result<std::vector<uint8_t>> {
          DSS_ASSIGN_OR_RETURN(std::vector<uint8_t> b, conv.bytes(*by_name.at(l.name)));
          done += static_cast<int64_t>(b.size());
          if (o.progress) o.progress(done, total);
          return b;
        }));
  }
  OrderedJson index;
  index["metadata"] = {{"total_size", total}};
  index["weight_map"] = weight_map;
  {
    std::ofstream out(fs::path(o.out_dir) / "model.safetensors.index.json");
    out << index.dump(2) << "\n";
    if (!out) return Status::error(o.out_dir, ": cannot write model.safetensors.index.json");
  }
  {
    std::ofstream out(fs::path(o.out_dir) / "config.json");
    out << output_config(cfg_json, conv.n_out(), o.policy).dump(2) << "\n";
    if (!out) return Status::error(o.out_dir, ": cannot write config.json");
  }
  for (const auto& e : fs::directory_iterator(o.in_dir, ec)) {  // tokenizer and other files
    const std::string n = e.path().filename().string();
    if (!e.is_regular_file() || n == "config.json" || n == "model.safetensors.index.json" ||
        e.path().extension() == ".safetensors")
      continue;
    fs::copy_file(e.path(), fs::path(o.out_dir) / n, fs::copy_options::overwrite_existing, ec);
    if (ec) return Status::error(e.path().string(), ": cannot copy: ", ec.message());
  }
  return Status::ok();
}

}  // namespace dss
