// Progress: a one-line live progress bar on stderr, drawn only when stderr is a terminal.
// Threading: single thread (the runner's io thread).
#pragma once

#include <cstdint>
#include <string>

namespace dss::bench {

class Progress {
 public:
  // `enabled` false (or stderr not a TTY): every call is a no-op.
  Progress(std::string label, int64_t total, bool enabled);
  void tick(bool ok);  // one request finished
  void done();         // ends the line

 private:
  void draw();
  std::string label_;
  int64_t total_, n_ok_ = 0, n_failed_ = 0;
  double t0_, last_draw_ = 0;
  bool on_;
};

}  // namespace dss::bench
