// Helpers for streaming parsers that look for fixed markers in text arriving in chunks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dss {

struct MarkerHit {
  size_t pos = std::string_view::npos;  // npos: no complete marker in the text
  size_t i_marker = 0;                  // which marker
};

// Earliest complete occurrence of any marker (ties: the longer marker).
MarkerHit find_first_marker(std::string_view text, const std::vector<std::string>& markers);

// Length of the prefix of `text` that cannot be the start of any marker, given that more text
// may follow: text.size() minus the longest suffix that is a proper prefix of some marker.
size_t safe_prefix_len(std::string_view text, const std::vector<std::string>& markers);

}  // namespace dss
