#include "model/runtime/load_options.h"

#include "base/check.h"
#include "model/deepseek/quant_policy.h"

namespace dss {

Result<WeightDType> parse_weight_dtype_flag(std::string_view s, std::string_view flag) {
  if (s.empty()) return WeightDType::kAsStored;
  // The spellings and the error are `dsserve convert --to`'s (quant_policy.h).
  DSS_ASSIGN_OR_RETURN(DType t, parse_weight_dtype(std::string(s), std::string(flag)));
  return t == DType::kBF16 ? WeightDType::kBf16
         : t == DType::kI8 ? WeightDType::kInt8
                           : WeightDType::kFp8;
}

Result<ActQuant> parse_act_quant(std::string_view s) {
  if (s == "none") return ActQuant::kNone;
  if (s == "fp8") return ActQuant::kFp8;
  return Status::error("--act-quant: '", s, "' is not none | fp8");
}

Result<WeightStorage> parse_weight_storage(std::string_view s) {
  if (s == "tiled") return WeightStorage::kTiled;
  if (s == "mmap") return WeightStorage::kMmap;
  return Status::error("--weight-layout: '", s, "' is not tiled | mmap");
}

Result<MatmulDType> parse_matmul_dtype(std::string_view s) {
  if (s == "f32") return MatmulDType::kF32;
  if (s == "bf16") return MatmulDType::kBf16;
  if (s == "auto") return MatmulDType::kAuto;
  return Status::error("--matmul-dtype: '", s, "' is not f32 | bf16 | auto");
}

const char* to_string(WeightDType v) {
  switch (v) {
    case WeightDType::kAsStored:
      return "";
    case WeightDType::kBf16:
      return "bf16";
    case WeightDType::kFp8:
      return "fp8";
    case WeightDType::kInt8:
      return "int8";
  }
  return "?";
}

const char* to_string(ActQuant v) { return v == ActQuant::kFp8 ? "fp8" : "none"; }
const char* to_string(WeightStorage v) { return v == WeightStorage::kMmap ? "mmap" : "tiled"; }

const char* to_string(MatmulDType v) {
  switch (v) {
    case MatmulDType::kF32:
      return "f32";
    case MatmulDType::kBf16:
      return "bf16";
    case MatmulDType::kAuto:
      return "auto";
  }
  return "?";
}

Result<Device> parse_device(std::string_view s) {
  if (s == "cpu") return Device::kCpu;
  if (s == "cuda") return Device::kCuda;
  return Status::error("--device: '", s, "' is not cpu | cuda");
}

const char* to_string(Device v) { return v == Device::kCuda ? "cuda" : "cpu"; }

DType converted_dtype(WeightDType v) {
  switch (v) {
    case WeightDType::kBf16:
      return DType::kBF16;
    case WeightDType::kFp8:
      return DType::kF8E4M3;
    case WeightDType::kInt8:
      return DType::kI8;
    case WeightDType::kAsStored:
      break;
  }
  DSS_CHECK(false, "converted_dtype of kAsStored");
  return DType::kF32;
}

}  // namespace dss
