#include "text/stop_string_matcher.h"

#include <algorithm>

namespace dss {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops, bool include_stop_str)
    : stops_(std::move(stops)), include_stop_str_(include_stop_str) {}

// Length of the longest suffix of `text` that is a proper prefix of some stop string.
size_t StopStringMatcher::n_hold(std::string_view text) const {
  size_t best = 0;
  for (const std::string& stop : stops_) {
    for (size_t n = std::min(stop.size() - (stop.empty() ? 0 : 1), text.size()); n > best; --n) {
      if (text.substr(text.size() - n) == std::string_view(stop).substr(0, n)) {
        best = n;
        break;
      }
    }
  }
  return best;
}

StopFeedResult StopStringMatcher::feed(std::string_view delta) {
  StopFeedResult out;
  if (stopped()) {
    out.stopped = true;
    return out;
  }
  held_.append(delta);
  // Earliest end, then earliest start (longer string), then list order.
  size_t best_end = std::string::npos, best_pos = 0;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const std::string& stop = stops_[i];
    if (stop.empty()) continue;
    const size_t pos = held_.find(stop);
    if (pos == std::string::npos) continue;
    const size_t end = pos + stop.size();
    if (best_end == std::string::npos || end < best_end || (end == best_end && pos < best_pos)) {
      best_end = end;
      best_pos = pos;
      i_stop_ = static_cast<int32_t>(i);
    }
  }
  if (stopped()) {
    out.text = held_.substr(0, include_stop_str_ ? best_end : best_pos);
    out.stopped = true;
    held_.clear();
    return out;
  }
  const size_t n_emit = held_.size() - n_hold(held_);
  out.text = held_.substr(0, n_emit);
  held_.erase(0, n_emit);
  return out;
}

std::string StopStringMatcher::finish() {
  std::string rest;
  if (!stopped()) rest.swap(held_);
  held_.clear();
  return rest;
}

}  // namespace dss
