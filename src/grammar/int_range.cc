#include "grammar/int_range.h"

#include <string>
#include <vector>

#include "base/check.h"

namespace dss::grammar {
namespace {

Expr digit_range(char lo, char hi) {
  ByteSet s;
  s.set_range(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
  return Expr::byte_set(s);
}

// All strings of digits of x's length between x and y (x <= y, same length; leading zeros
// allowed: these are the tails after a fixed first digit).
Expr same_length(const std::string& x, const std::string& y) {
  if (x.empty()) return Expr::empty();
  if (x == y) return Expr::literal(x);
  const size_t n = x.size();
  if (x[0] == y[0])
    return Expr::seq(
        {Expr::byte(static_cast<uint8_t>(x[0])), same_length(x.substr(1), y.substr(1))});
  const std::string zeros(n - 1, '0'), nines(n - 1, '9');
  const std::string xt = x.substr(1), yt = y.substr(1);
  std::vector<Expr> alts;
  char first_full = x[0], last_full = y[0];
  if (xt != zeros) {
    alts.push_back(Expr::seq({Expr::byte(static_cast<uint8_t>(x[0])), same_length(xt, nines)}));
    ++first_full;
  }
  if (yt != nines) --last_full;
  if (first_full <= last_full) {
    alts.push_back(Expr::seq({digit_range(first_full, last_full),
                              Expr::repeat(digit_range('0', '9'), static_cast<int32_t>(n - 1),
                                           static_cast<int32_t>(n - 1))}));
  }
  if (yt != nines) {
    alts.push_back(Expr::seq({Expr::byte(static_cast<uint8_t>(y[0])), same_length(zeros, yt)}));
  }
  return Expr::alt(std::move(alts));
}

// Canonical non-negative integers in [a, b].
Expr non_negative(uint64_t a, uint64_t b) {
  std::vector<Expr> alts;
  const std::string sb = std::to_string(b);
  for (size_t n = std::to_string(a).size(); n <= sb.size(); ++n) {
    uint64_t lo_n = n == 1 ? 0 : 1;  // smallest n-digit number
    for (size_t k = 1; k < n; ++k) lo_n *= 10;
    const std::string hi_n = std::string(n, '9');
    const uint64_t lo = a > lo_n ? a : lo_n;
    const std::string hi = n == sb.size() ? sb : hi_n;
    alts.push_back(same_length(std::to_string(lo), hi));
  }
  return Expr::alt(std::move(alts));
}

uint64_t magnitude(int64_t v) {
  return v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
}

}  // namespace

Expr int_range_expr(int64_t lo, int64_t hi) {
  DSS_CHECK(lo <= hi, "lo=", lo, " hi=", hi);
  std::vector<Expr> alts;
  if (lo < 0) {
    const uint64_t small = hi < 0 ? magnitude(hi) : 1;
    alts.push_back(Expr::seq({Expr::byte('-'), non_negative(small, magnitude(lo))}));
  }
  if (hi >= 0) alts.push_back(non_negative(lo > 0 ? static_cast<uint64_t>(lo) : 0, hi));
  return Expr::alt(std::move(alts));
}

}  // namespace dss::grammar
