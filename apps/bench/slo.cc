#include "apps/bench/slo.h"

#include <charconv>
#include <sstream>

namespace dss::bench {

Result<Slo> parse_slo(const std::string& text) {
  Slo slo;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    if (colon == std::string::npos)
      return Status::error("--slo: '", item, "' is not KEY:MS (keys ttft, tpot, e2el)");
    const std::string key = item.substr(0, colon);
    const std::string val = item.substr(colon + 1);
    double ms = 0;
    auto [ptr, ec] = std::from_chars(val.data(), val.data() + val.size(), ms);
    if (ec != std::errc() || ptr != val.data() + val.size() || !(ms > 0))
      return Status::error("--slo: '", val, "' is not a positive number of milliseconds");
    if (key == "ttft") {
      slo.ttft_ms = ms;
    } else if (key == "tpot") {
      slo.tpot_ms = ms;
    } else if (key == "e2el") {
      slo.e2el_ms = ms;
    } else {
      return Status::error("--slo: unknown key '", key, "' (keys ttft, tpot, e2el)");
    }
  }
  return slo;
}

std::string slo_to_string(const Slo& slo) {
  std::ostringstream os;
  const char* sep = "";
  auto put = [&](const char* k, const std::optional<double>& v) {
    if (!v) return;
    os << sep << k << ':' << *v;
    sep = ",";
  };
  put("ttft", slo.ttft_ms);
  put("tpot", slo.tpot_ms);
  put("e2el", slo.e2el_ms);
  return os.str();
}

}  // namespace dss::bench
