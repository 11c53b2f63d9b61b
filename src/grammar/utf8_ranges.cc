#include "grammar/utf8_ranges.h"

#include <algorithm>
#include <string>

#include "base/check.h"

namespace dss::grammar {
namespace {

constexpr uint32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

int utf8_len(uint32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

// Appends one alternative per byte-range sequence covering [lo, hi], where lo and hi have the
// same UTF-8 length (the split of Rust regex-syntax's Utf8Sequences, re-derived).
void split_range(uint32_t lo, uint32_t hi, std::vector<Expr>& out) {
  const int n = utf8_len(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_range(lo, lo | m, out);
        split_range((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split_range(lo, (hi & ~m) - 1, out);
        split_range(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a, b;
  append_utf8(lo, a);
  append_utf8(hi, b);
  DSS_CHECK(a.size() == b.size(), "lo=", lo, " hi=", hi);
  std::vector<Expr> bytes;
  for (size_t k = 0; k < a.size(); ++k) {
    ByteSet s;
    s.set_range(static_cast<uint8_t>(a[k]), static_cast<uint8_t>(b[k]));
    bytes.push_back(Expr::byte_set(s));
  }
  out.push_back(Expr::seq(std::move(bytes)));
}

}  // namespace

void CodepointSet::add(uint32_t lo, uint32_t hi) {
  DSS_CHECK(lo <= hi && hi <= kMaxCodepoint, "lo=", lo, " hi=", hi);
  ranges_.emplace_back(lo, hi);
  std::sort(ranges_.begin(), ranges_.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges_) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  ranges_ = std::move(merged);
}

void CodepointSet::add(const CodepointSet& other) {
  for (const auto& r : other.ranges_) add(r.first, r.second);
}

CodepointSet CodepointSet::complement() const {
  CodepointSet out;
  uint32_t next = 0;
  for (const auto& r : ranges_) {
    if (r.first > next) out.ranges_.emplace_back(next, r.first - 1);
    next = r.second + 1;
  }
  if (next <= kMaxCodepoint) out.ranges_.emplace_back(next, kMaxCodepoint);
  return out;
}

CodepointSet CodepointSet::minus(const CodepointSet& other) const {
  CodepointSet out;
  CodepointSet keep = other.complement();
  // Intersection of two sorted range lists.
  size_t i = 0, j = 0;
  while (i < ranges_.size() && j < keep.ranges_.size()) {
    const uint32_t lo = std::max(ranges_[i].first, keep.ranges_[j].first);
    const uint32_t hi = std::min(ranges_[i].second, keep.ranges_[j].second);
    if (lo <= hi) out.ranges_.emplace_back(lo, hi);
    if (ranges_[i].second < keep.ranges_[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

bool CodepointSet::contains(uint32_t c) const {
  for (const auto& r : ranges_) {
    if (c >= r.first && c <= r.second) return true;
  }
  return false;
}

Expr utf8_expr(const CodepointSet& set) {
  std::vector<Expr> alts;
  ByteSet ascii;
  static constexpr uint32_t kBounds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodepoint};
  for (auto [lo, hi] : set.ranges()) {
    // Cut out the surrogates, then split at the UTF-8 length boundaries.
    std::vector<std::pair<uint32_t, uint32_t>> parts;
    if (lo < kSurrogateLo && hi > kSurrogateHi) {
      parts = {{lo, kSurrogateLo - 1}, {kSurrogateHi + 1, hi}};
    } else if (lo >= kSurrogateLo && hi <= kSurrogateHi) {
      continue;
    } else if (lo >= kSurrogateLo && lo <= kSurrogateHi) {
      parts = {{kSurrogateHi + 1, hi}};
    } else if (hi >= kSurrogateLo && hi <= kSurrogateHi) {
      parts = {{lo, kSurrogateLo - 1}};
    } else {
      parts = {{lo, hi}};
    }
    for (auto [a, b] : parts) {
      for (uint32_t bound : kBounds) {
        if (a > b) break;
        if (a > bound) continue;
        const uint32_t end = std::min(b, bound);
        if (end < 0x80) {
          ascii.set_range(static_cast<uint8_t>(a), static_cast<uint8_t>(end));
        } else {
          split_range(a, end, alts);
        }
        a = end + 1;
      }
    }
  }
  if (!ascii.empty()) alts.insert(alts.begin(), Expr::byte_set(ascii));
  return Expr::alt(std::move(alts));
}

void append_utf8(uint32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

bool decode_utf8(std::string_view s, size_t& i, uint32_t& c) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  int n = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return false;
  c = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (int k = 1; k < n; ++k) {
    const auto b = static_cast<uint8_t>(s[i + k]);
    if ((b & 0xC0) != 0x80) return false;
    c = (c << 6) | (b & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (c < kMin[n] || c > kMaxCodepoint || (c >= kSurrogateLo && c <= kSurrogateHi)) return false;
  i += n;
  return true;
}

}  // namespace dss::grammar
