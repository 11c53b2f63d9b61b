// CHECK and DCHECK: the second and third failure tiers.
//
// DSS_CHECK(cond, values...): a programmer invariant, always on. On failure it prints
//   file:line, the condition and the values, then aborts. Never use it for input errors
//   (those return Status).
// DSS_DCHECK(cond, values...): an invariant too costly for release builds; active in Debug and
//   sanitizer builds (DSS_DCHECK_ON), compiled out (condition not evaluated) otherwise.
#pragma once

#include <string>

#include "base/str_cat.h"

namespace dss::detail {
[[noreturn]] void check_failed(const char* file, int line, const char* cond,
                               const std::string& msg);
}  // namespace dss::detail

#define DSS_CHECK(cond, ...)                                                      \
  do {                                                                            \
    if (!(cond)) [[unlikely]] {                                                   \
      ::dss::detail::check_failed(__FILE__, __LINE__, #cond,                      \
                                  ::dss::str_cat("" __VA_OPT__(, ) __VA_ARGS__)); \
    }                                                                             \
  } while (0)

#if !defined(NDEBUG) || defined(DSS_DCHECK_ON)
#define DSS_DCHECK_IS_ON 1
#define DSS_DCHECK(cond, ...) DSS_CHECK(cond __VA_OPT__(, ) __VA_ARGS__)
#else
#define DSS_DCHECK_IS_ON 0
#define DSS_DCHECK(cond, ...) \
  do {                        \
  } while (false && (cond))
#endif
