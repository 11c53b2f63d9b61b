#include "apps/bench/tune_grid.h"

#include <sstream>

namespace dss::bench {

bool is_client_key(const std::string& key) {
  return key == "max-concurrency" || key == "request-rate";
}

std::string TuneSetting::label() const {
  std::string s;
  for (const auto& [k, v] : values) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s.empty() ? "default" : s;
}

std::vector<std::string> TuneSetting::server_flags() const {
  std::vector<std::string> f;
  for (const auto& [k, v] : values) {
    if (is_client_key(k)) continue;
    f.push_back("--" + k);
    f.push_back(v);
  }
  return f;
}

std::string TuneSetting::server_flags_text() const {
  std::string s;
  for (const std::string& f : server_flags()) s += (s.empty() ? "" : " ") + f;
  return s;
}

Result<std::vector<TuneSetting>> expand_grid(const std::vector<std::string>& axes) {
  std::vector<TuneSetting> out(1);
  for (const std::string& axis : axes) {
    const size_t eq = axis.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == axis.size())
      return Status::error("--grid: '", axis, "' is not KEY=V1,V2,...");
    std::string key = axis.substr(0, eq);
    while (key.starts_with("-")) key.erase(0, 1);
    std::vector<std::string> vals;
    std::stringstream ss(axis.substr(eq + 1));
    for (std::string v; std::getline(ss, v, ',');) {
      if (v.empty()) return Status::error("--grid: empty value in '", axis, "'");
      vals.push_back(v);
    }
    std::vector<TuneSetting> next;
    for (const TuneSetting& s : out) {
      for (const std::string& v : vals) {
        TuneSetting t = s;
        t.values.emplace_back(key, v);
        next.push_back(std::move(t));
      }
    }
    out = std::move(next);
  }
  return out;
}

}  // namespace dss::bench
