// Why a request ended (OpenAI's finish_reason, plus abort for cancelled requests and error for a
// request the engine failed: non-finite logits, a deadline; TokenEvent::error says why).
#pragma once

#include <cstdint>

namespace dss {

enum class FinishReason : uint8_t { kNone, kStop, kLength, kAbort, kError };

}  // namespace dss
