#include "apps/bench/prom_text.h"

#include <cstdlib>

namespace dss::bench {

std::optional<double> prom_sample(std::string_view text, std::string_view name) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.size() > name.size() && line.starts_with(name) && line[name.size()] == ' ') {
      const std::string v(line.substr(name.size() + 1));
      char* stop = nullptr;
      const double x = std::strtod(v.c_str(), &stop);
      if (stop == v.c_str()) return std::nullopt;
      return x;
    }
  }
  return std::nullopt;
}

}  // namespace dss::bench
