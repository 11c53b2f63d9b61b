#include "base/process_memory.h"

#include <fstream>
#include <string>

namespace dss {

namespace {
int64_t status_kib(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string k, unit;
  int64_t v = 0;
  while (f >> k) {
    if (k == key) return (f >> v >> unit) ? v * 1024 : 0;
    std::getline(f, unit);
  }
  return 0;
}
}  // namespace

int64_t resident_bytes() { return status_kib("VmRSS:"); }
int64_t peak_resident_bytes() { return status_kib("VmHWM:"); }

}  // namespace dss
