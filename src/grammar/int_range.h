// Decimal integers in a closed range as a grammar: the digit-range construction (split by
// length, then by leading digit) that matches exactly the canonical spellings (no leading zeros,
// no "-0", no "+") of the integers in [lo, hi].
#pragma once

#include <cstdint>

#include "grammar/expr.h"

namespace dss::grammar {

// Precondition: lo <= hi.
Expr int_range_expr(int64_t lo, int64_t hi);

}  // namespace dss::grammar
