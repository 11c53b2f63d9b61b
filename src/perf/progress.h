// bench-model's progress and phase tables go to stderr, flushed at once (stdout carries the
// result: the JSON or the tables).
#pragma once

#include <cstdio>

namespace dss::perf {

template <class... Args>
void progress(const char* fmt, Args... args) {
  std::fprintf(stderr, fmt, args...);
  std::fflush(stderr);
}

}  // namespace dss::perf
