// Why a request ended (OpenAI's finish_reason, plus abort for cancelled requests).
#pragma once

#include <cstdint>

namespace dss {

enum class FinishReason : uint8_t { kNone, kStop, kLength, kAbort };

}  // namespace dss
