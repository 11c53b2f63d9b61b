#include "text/byte_level.h"

#include <array>

#include "text/utf8.h"

namespace dss {
namespace {

bool is_self_mapped(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<uint32_t, 256> to_char{};
  std::array<int16_t, 0x144> to_byte{};  // indexed by code point < 0x144; -1 when unused
  Tables() {
    to_byte.fill(-1);
    uint32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      to_char[b] = is_self_mapped(b) ? static_cast<uint32_t>(b) : next++;
      to_byte[to_char[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

uint32_t byte_level_char(uint8_t b) { return tables().to_char[b]; }

std::optional<std::string> byte_level_decode(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    size_t n = utf8_valid_len(token, i);
    if (n == 0) return std::nullopt;
    uint32_t cp = utf8_decode(token, i, n);
    if (cp >= tables().to_byte.size() || tables().to_byte[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(tables().to_byte[cp]));
    i += n;
  }
  return out;
}

}  // namespace dss
