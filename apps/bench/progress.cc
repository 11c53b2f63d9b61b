#include "apps/bench/progress.h"

#include <unistd.h>

#include <cstdio>

#include "base/clock.h"

namespace dss::bench {

Progress::Progress(std::string label, int64_t total, bool enabled)
    : label_(std::move(label)),
      total_(total),
      t0_(now_seconds()),
      on_(enabled && isatty(STDERR_FILENO) == 1) {
  draw();
}

void Progress::tick(bool ok) {
  ++(ok ? n_ok_ : n_failed_);
  if (now_seconds() - last_draw_ > 0.1 || n_ok_ + n_failed_ == total_) draw();
}

void Progress::draw() {
  if (!on_) return;
  last_draw_ = now_seconds();
  constexpr int kWidth = 30;
  const int64_t n = n_ok_ + n_failed_;
  const int filled = total_ > 0 ? static_cast<int>(kWidth * n / total_) : kWidth;
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '#' : '.';
  bar[kWidth] = 0;
  const double el = last_draw_ - t0_;
  std::fprintf(stderr, "\r%s [%s] %lld/%lld  failed %lld  %.1fs  %.2f req/s ", label_.c_str(), bar,
               static_cast<long long>(n), static_cast<long long>(total_),
               static_cast<long long>(n_failed_), el, el > 0 ? static_cast<double>(n) / el : 0.0);
  std::fflush(stderr);
}

void Progress::done() {
  if (!on_) return;
  draw();
  std::fputc('\n', stderr);
  on_ = false;
}

}  // namespace dss::bench
