#include "text/utf8.h"

namespace dss {
namespace {

// Bounds of the second byte for a given lead byte (Unicode Table 3-7); other continuation
// bytes are always 0x80..0xBF. Returns the sequence length, 0 for an invalid lead.
size_t lead_info(uint8_t b, uint8_t& lo, uint8_t& hi) {
  lo = 0x80;
  hi = 0xBF;
  if (b < 0x80) return 1;
  if (b < 0xC2) return 0;
  if (b < 0xE0) return 2;
  if (b < 0xF0) {
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
    return 3;
  }
  if (b < 0xF5) {
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
    return 4;
  }
  return 0;
}

// Number of bytes of the maximal subpart at s[i] that is a valid prefix (>= 1 consumed when
// invalid), and whether the full sequence is complete.
size_t scan(std::string_view s, size_t i, bool& complete) {
  uint8_t lo, hi;
  size_t n = lead_info(static_cast<uint8_t>(s[i]), lo, hi);
  complete = false;
  if (n == 0) return 1;
  if (n == 1) {
    complete = true;
    return 1;
  }
  size_t k = 1;
  for (; k < n; ++k) {
    if (i + k >= s.size()) return k;  // truncated: valid prefix so far
    uint8_t c = static_cast<uint8_t>(s[i + k]);
    uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (c < l || c > h) return k;
  }
  complete = true;
  return n;
}

}  // namespace

size_t utf8_valid_len(std::string_view s, size_t i) {
  bool complete;
  size_t n = scan(s, i, complete);
  return complete ? n : 0;
}

bool utf8_is_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = utf8_valid_len(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    bool complete;
    size_t n = scan(s, i, complete);
    if (complete) {
      out.append(s.substr(i, n));
    } else {
      out.append("\xEF\xBF\xBD");
    }
    i += n;
  }
  return out;
}

size_t utf8_complete_prefix(std::string_view s) {
  // A pending sequence is at most 3 bytes long, so only the tail needs a look.
  size_t start = s.size() > 3 ? s.size() - 3 : 0;
  for (size_t i = start; i < s.size(); ++i) {
    uint8_t lo, hi;
    if (lead_info(static_cast<uint8_t>(s[i]), lo, hi) < 2) continue;
    bool complete;
    size_t n = scan(s, i, complete);
    if (!complete && i + n == s.size()) return i;  // valid but unfinished at the very end
  }
  return s.size();
}

uint32_t utf8_decode(std::string_view s, size_t i, size_t len) {
  auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i + k])); };
  switch (len) {
    case 1:
      return b(0);
    case 2:
      return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3:
      return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default:
      return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace dss
