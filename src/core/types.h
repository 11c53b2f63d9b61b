// Plain ids shared by every layer.
#pragma once

#include <cstdint>

namespace dss {

using TokenId = int32_t;
using PageId = int32_t;
using RequestId = int64_t;

inline constexpr PageId kNoPage = -1;

}  // namespace dss
