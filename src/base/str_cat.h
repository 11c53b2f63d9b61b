// str_cat(a, b, ...): concatenates anything printable with operator<< into a std::string.
#pragma once

#include <sstream>
#include <string>

namespace dss {

template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

}  // namespace dss
