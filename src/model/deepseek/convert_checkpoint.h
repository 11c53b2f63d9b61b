// `dsserve convert`: rewrites a DeepSeek checkpoint with its linear weights in another dtype, in
// the official layout (same shard files and tensor-to-file assignment as the input, index,
// config.json with the matching quantization_config, other files such as the tokenizer copied).
//
//   to bf16  FP8 weights dequantised (fp8 * block scale in f32, then round to nearest even), as
//            DeepSeek's fp8_cast_bf16.py; scale tensors dropped; no quantization_config.
//   to fp8   e4m3 with 128x128 block scales `*_scale_inv` (amax/448, or power-of-two scales when
//            the source config says scale_fmt ue8m0 or the model is V3.2).
//   to int8  per-output-channel INT8 `weight` + F32 `weight_scale` [rows, 1] (SGLang w8a8_int8).
// Which tensors convert: QuantPolicy (model/deepseek/quant_policy.h). Tensors already in the
// target dtype are copied unchanged. Memory: one tensor at a time (plus the mapped input).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "model/deepseek/quant_policy.h"

namespace dss {

struct ConvertOptions {
  std::string in_dir;
  std::string out_dir;  // created; must not be in_dir
  QuantPolicy policy;   // policy.ue8m0 is derived from the source config
  // Called after every tensor with (bytes written, total bytes to write); may be null.
  void (*progress)(int64_t, int64_t) = nullptr;
};

Status convert_checkpoint(const ConvertOptions& o);

}  // namespace dss
