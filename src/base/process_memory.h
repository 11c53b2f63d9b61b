// This process's memory as Linux reports it (/proc/self/status).
#pragma once

#include <cstdint>

namespace dss {

// Resident set size now (VmRSS) and its peak (VmHWM), in bytes; 0 where /proc is unreadable.
int64_t resident_bytes();
int64_t peak_resident_bytes();

}  // namespace dss
