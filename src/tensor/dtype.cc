#include "tensor/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <limits>

namespace dss {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32:
      return 4;
    case DType::kBF16:
      return 2;
    case DType::kF16:
      return 2;
    case DType::kF8E4M3:
      return 1;
    case DType::kI8:
      return 1;
    case DType::kU8:
      return 1;
    case DType::kI32:
      return 4;
    case DType::kI64:
      return 8;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "F32";
    case DType::kBF16:
      return "BF16";
    case DType::kF16:
      return "F16";
    case DType::kF8E4M3:
      return "F8_E4M3";
    case DType::kI8:
      return "I8";
    case DType::kU8:
      return "U8";
    case DType::kI32:
      return "I32";
    case DType::kI64:
      return "I64";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view n) {
  if (n == "F32") return DType::kF32;
  if (n == "BF16") return DType::kBF16;
  if (n == "F16") return DType::kF16;
  if (n == "F8_E4M3") return DType::kF8E4M3;
  if (n == "I8") return DType::kI8;
  if (n == "U8") return DType::kU8;
  if (n == "I32") return DType::kI32;
  if (n == "I64") return DType::kI64;
  return std::nullopt;
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    const float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return f32_from_bits(sign | 0x7F800000u | (man << 13));
  return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t f32_to_f16(float f) {
  const uint32_t b = bits_from_f32(f);
  const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
  const float a = std::fabs(f);
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7E00u);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to inf
  if (a < 6.103515625e-05f) {                                       // subnormal: units of 2^-24
    const float q = std::nearbyint(a * 16777216.0f);                // ties to even (default mode)
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(q));
  }
  uint32_t x = b & 0x7FFFFFFFu;
  x += 0xFFFu + ((x >> 13) & 1u);  // round mantissa to 10 bits, ties to even
  return static_cast<uint16_t>(sign | (((x >> 23) - 112) << 10) | ((x >> 13) & 0x3FFu));
}

namespace {
std::array<float, 256> make_fp8_table() {
  std::array<float, 256> t{};
  for (int v = 0; v < 256; ++v) {
    const int sign = v & 0x80, exp = (v >> 3) & 0xF, man = v & 7;
    float mag;
    if (exp == 0xF && man == 7) {
      mag = std::numeric_limits<float>::quiet_NaN();
    } else if (exp == 0) {
      mag = std::ldexp(static_cast<float>(man) / 8.0f, -6);
    } else {
      mag = std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
    }
    t[static_cast<size_t>(v)] = sign ? -mag : mag;
  }
  return t;
}
const std::array<float, 256> kFp8Table = make_fp8_table();
}  // namespace

float fp8e4m3_to_f32(uint8_t v) { return kFp8Table[v]; }

uint8_t f32_to_fp8e4m3(float f) {
  // Integer rounding on the f32 bits (no libm calls: this runs for every new cache row's indexer
  // key and every simulated-fp8 activation in the decode step).
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t a = bits & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0x7F;  // NaN
  if (a >= std::bit_cast<uint32_t>(kFp8E4M3Max))
    return static_cast<uint8_t>(sign | 0x7E);  // saturate
  if (a >= 0x3C800000u) {                      // >= 2^-6: a normal e4m3 binade
    // Round the 23-bit mantissa to 3 bits, to nearest even (a carry moves into the exponent,
    // which is still on the grid; below 448 it never passes 448's code 0x7E), then rebias the
    // exponent from 127 to 7: code = (biased exponent << 3 | mantissa) - (120 << 3).
    const uint32_t r = (a + 0x7FFFFu + ((a >> 20) & 1u)) >> 20;
    return static_cast<uint8_t>(sign | (r - (120u << 3)));
  }
  // Subnormal grid (steps of 2^-9): |f| * 2^9 < 8 is exact, and adding then subtracting 2^23
  // rounds it to an integer, to nearest even (the default rounding mode); 8 is the smallest
  // normal, code 0x08.
  const float scaled = std::bit_cast<float>(a) * 512.0f;
  const float man = (scaled + 8388608.0f) - 8388608.0f;
  return static_cast<uint8_t>(sign | static_cast<uint8_t>(man));
}

}  // namespace dss
