#include "model/deepseek/quant_policy.h"

namespace dss {

bool QuantPolicy::converts(const std::string& name, size_t n_dims) const {
  static const std::string kSuffix = ".weight";
  if (n_dims != 2 || name.size() < kSuffix.size() ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
    return false;
  for (const std::string& e : exclude) {
    if (!e.empty() && name.find(e) != std::string::npos) return false;
  }
  return true;
}

Result<DType> parse_weight_dtype(const std::string& s, const std::string& what) {
  if (s == "bf16") return DType::kBF16;
  if (s == "fp8") return DType::kF8E4M3;
  if (s == "int8") return DType::kI8;
  return Status::error(what, ": '", s, "' is not a weight dtype (bf16 | fp8 | int8)");
}

}  // namespace dss
