// StopStringMatcher: finds stop strings in a stream of detokenized text deltas and decides what
// may be shown now.
//
// feed(delta) returns the text that is safe to emit: everything except a tail that could still
// become the start of a stop string. When a stop string completes, the output is cut just before
// it (or just after it with include_stop_str), `stopped` becomes true and later feeds return
// nothing. finish() returns the held-back tail at the end of generation (nothing once stopped).
//
// Which stop wins: the occurrence that ends first in the text (ties: the longer one, then the
// earlier in the list). That is what a byte-by-byte stream would see first, so the output does not
// depend on how the text was split into deltas (tested at every split point). NOTE: vLLM instead
// takes the first stop string in list order found in the new window; the two differ only when
// several stop strings overlap.
//
// UTF-8: operates on bytes. Deltas and stop strings are complete UTF-8, so a match starts on a
// character boundary, and the held-back tail (a prefix of a stop string) does too: emitted text
// never splits a character. Empty stop strings are ignored.
// Threading: one per request, used by that request's consumer thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dss {

struct StopFeedResult {
  std::string text;      // safe to emit now
  bool stopped = false;  // a stop string completed (now or earlier)
};

class StopStringMatcher {
 public:
  StopStringMatcher(std::vector<std::string> stops, bool include_stop_str);

  StopFeedResult feed(std::string_view delta);
  std::string finish();

  bool stopped() const { return i_stop_ >= 0; }
  // Index into the constructor's list of the stop string that matched, or -1.
  int32_t i_stop() const { return i_stop_; }

 private:
  size_t n_hold(std::string_view text) const;

  std::vector<std::string> stops_;
  bool include_stop_str_;
  std::string held_;  // received, not yet emitted
  int32_t i_stop_ = -1;
};

}  // namespace dss
