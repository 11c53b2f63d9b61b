// LoadOptions: how Model::load places a checkpoint, as typed values. The command-line spellings
// (`--weight-dtype fp8`, ...) are parsed once in the apps (parse_* below, or CLI11 maps built
// from the same names); the model never sees flag text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "tensor/dtype.h"

namespace dss {

// --weight-dtype / --lm-head-dtype: keep the checkpoint's dtype (memory-mapped, zero copy) or
// convert at load into owned buffers (QuantPolicy's default set; lm_head alone for the latter).
enum class WeightDType { kAsStored, kBf16, kFp8, kInt8 };
// --act-quant: kFp8 is W8A8: activations entering FP8 linear layers are quantised per token per
// 128 values (the Workspace needs WorkspaceLimits::act_quant).
enum class ActQuant { kNone, kFp8 };
// --weight-layout: kTiled repacks the linear weights at load into the kernels' tiled layout
// (tensor/matrix.h; an owned copy, faster GEMV); kMmap reads them in place from the mapped
// checkpoint (zero copy, row-major). Same results either way in f32 arithmetic, bit for bit.
enum class WeightStorage { kTiled, kMmap };
// --matmul-dtype: the arithmetic of the tiled FP8 / BF16 linear layers (MatmulArith): kF32
// (DeepSeek's float32 reference arithmetic) | kBf16 (x rounded to bf16, AVX512-BF16 dot products,
// as DeepSeek's bf16 inference; an error on CPUs without it) | kAuto (the faster of the two on
// this CPU, measured at load and cached per CPU model: model/runtime/matmul_choice.h).
// The router, the V3.2 indexer, the absorbed-attention W_UK and INT8 weights always stay f32.
enum class MatmulDType { kF32, kBf16, kAuto };

// --device: cpu (CpuBackend) | cuda (CudaBackend on CUDA device 0; CUDA builds only).
enum class Device { kCpu, kCuda };

struct LoadOptions {
  std::string dir;        // checkpoint directory (config.json + safetensors)
  int32_t n_threads = 0;  // compute threads (0: all hardware threads)
  WeightDType weight_dtype = WeightDType::kAsStored;
  ActQuant act_quant = ActQuant::kNone;
  WeightStorage weight_layout = WeightStorage::kTiled;
  // lm_head is the largest single read of a decode step on small models (ds-mini: 265 of 430 MB
  // in BF16); DeepSeek's releases store it in BF16, which --weight-dtype leaves alone.
  WeightDType lm_head_dtype = WeightDType::kAsStored;
  MatmulDType matmul_dtype = MatmulDType::kF32;
  // With a tensor-parallel group (Model::load's tp_group): partition the routed experts over it
  // (--ep-size equal to --tp-size) instead of splitting every expert's rows.
  bool expert_parallel = false;
  // Load the checkpoint's MTP module (--speculative-algorithm NEXTN): Model::mtp_forward.
  bool mtp = false;
  // --weight-cache DIR: keep the placed weights in a file there and map it on later loads
  // (model/deepseek/weight_cache.h; empty: off).
  std::string weight_cache_dir;
  // DP attention (--enable-dp-attention): the group's ranks are attention groups of one rank with
  // their own batches; only the routed experts are partitioned (expert_parallel set too), and the
  // MoE layers exchange tokens (ShardSpec::dp_attention).
  bool dp_attention = false;
  // Where the model runs (--device): kCuda needs a CUDA build (DSS_CUDA) and a device.
  Device device = Device::kCpu;
};

// Flag spellings. parse_*: "bf16" | "fp8" | "int8" (and "" for as stored; parse_weight_dtype's);
// "none" | "fp8";
// "tiled" | "mmap"; "f32" | "bf16" | "auto". Errors name `flag` and the accepted values.
Result<WeightDType> parse_weight_dtype_flag(std::string_view s, std::string_view flag);
Result<ActQuant> parse_act_quant(std::string_view s);
Result<WeightStorage> parse_weight_storage(std::string_view s);
Result<MatmulDType> parse_matmul_dtype(std::string_view s);
Result<Device> parse_device(std::string_view s);  // "cpu" | "cuda"
// The flag spelling of a value ("" for WeightDType::kAsStored).
const char* to_string(WeightDType v);
const char* to_string(ActQuant v);
const char* to_string(WeightStorage v);
const char* to_string(MatmulDType v);
const char* to_string(Device v);
// The DType a conversion produces (kAsStored: none; CHECK-fails).
DType converted_dtype(WeightDType v);

}  // namespace dss
