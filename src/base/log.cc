#include "base/log.h"

#include <atomic>
#include <cstdio>

namespace dss {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}
}  // namespace

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }
void log_line(LogLevel level, const std::string& msg) {
  std::fprintf(stderr, "[dsserve %s] %s\n", level_name(level), msg.c_str());
}

}  // namespace dss
