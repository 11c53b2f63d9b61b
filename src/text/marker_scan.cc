#include "text/marker_scan.h"

namespace dss {

MarkerHit find_first_marker(std::string_view text, const std::vector<std::string>& markers) {
  MarkerHit best;
  size_t best_len = 0;
  for (size_t i = 0; i < markers.size(); ++i) {
    size_t p = text.find(markers[i]);
    if (p == std::string_view::npos) continue;
    if (p < best.pos || (p == best.pos && markers[i].size() > best_len)) {
      best = {p, i};
      best_len = markers[i].size();
    }
  }
  return best;
}

size_t safe_prefix_len(std::string_view text, const std::vector<std::string>& markers) {
  size_t keep = 0;  // longest suffix that is a proper prefix of a marker
  for (const std::string& m : markers) {
    size_t max_k = std::min(text.size(), m.size() - 1);
    for (size_t k = max_k; k > keep; --k) {
      if (text.substr(text.size() - k) == std::string_view(m).substr(0, k)) {
        keep = k;
        break;
      }
    }
  }
  return text.size() - keep;
}

}  // namespace dss
