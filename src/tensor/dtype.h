// Element types of checkpoint tensors and their scalar conversions.
//
// F8E4M3 is float8_e4m3fn: 1 sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 is
// subnormal ((m/8)*2^-6); 0x7F/0xFF are NaN; no infinities; max finite 448.
// BF16 is the upper half of an IEEE float32.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace dss {

enum class DType : uint8_t { kF32, kBF16, kF16, kF8E4M3, kI8, kU8, kI32, kI64 };

// Bytes per element.
size_t dtype_size(DType t);
// The safetensors spelling ("F32", "BF16", "F16", "F8_E4M3", "I8", "U8", "I32", "I64").
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);

inline float f32_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline uint32_t bits_from_f32(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

inline float bf16_to_f32(uint16_t v) { return f32_from_bits(static_cast<uint32_t>(v) << 16); }
// Round to nearest, ties to even; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t b = bits_from_f32(f);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((b >> 16) | 0x40);
  b += 0x7FFFu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}

float f16_to_f32(uint16_t v);
uint16_t f32_to_f16(float f);  // round to nearest even

// Exact value of an e4m3fn code (NaN for 0x7F / 0xFF).
float fp8e4m3_to_f32(uint8_t v);
// Saturating round-to-nearest-even onto the e4m3fn grid (|x| > 448 -> +-448; NaN -> 0x7F).
uint8_t f32_to_fp8e4m3(float f);

// Largest finite e4m3fn magnitude.
inline constexpr float kFp8E4M3Max = 448.0f;

}  // namespace dss
