// Which tensors of a DeepSeek checkpoint a weight-dtype conversion touches, shared by
// `dsserve convert` and the load-time `--weight-dtype` so both follow one rule
// (docs/quantization.md):
//   converted = every 2-D tensor named `*.weight` whose name contains none of `exclude`;
//   default exclude = lm_head, embed_tokens, mlp.gate.weight (router), weights_proj (V3.2
//   indexer head weights), and the MTP module's shared_head.head and eh_proj - the tensors
//   DeepSeek's own FP8 release keeps in BF16 (--lm-head-dtype converts the two heads).
// 1-D tensors (norms, biases) and scale tensors are never converted.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"

namespace dss {

struct QuantPolicy {
  DType to = DType::kBF16;  // BF16 | F8E4M3 | I8
  std::vector<std::string> exclude = default_excludes();
  bool ue8m0 = false;  // F8E4M3 output: power-of-two block scales

  static std::vector<std::string> default_excludes() {
    return {"lm_head", "embed_tokens", "mlp.gate.weight", "weights_proj", "shared_head.head",
            "eh_proj"};
  }
  bool converts(const std::string& name, size_t n_dims) const;
};

// "bf16" | "fp8" | "int8" -> BF16 | F8E4M3 | I8; errors name `what` (the flag).
Result<DType> parse_weight_dtype(const std::string& s, const std::string& what);

// Name of the per-channel INT8 scale of weight `name` ("x.weight" -> "x.weight_scale", the
// SGLang w8a8_int8 layout) and of the FP8 block scale ("x.weight" -> "x.weight_scale_inv").
inline std::string int8_scale_name(const std::string& name) { return name + "_scale"; }
inline std::string fp8_scale_name(const std::string& name) { return name + "_scale_inv"; }

}  // namespace dss
