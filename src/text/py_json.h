// py_json_dumps: JSON text exactly as Python's `json.dumps(value, ensure_ascii=...)` writes it
// (separators ", " and ": ", key order kept). DeepSeek's reference encoders and model cards
// build prompts with json.dumps, so byte-equal prompts need the same spelling.
#pragma once

#include <string>

#include "io/json.h"

namespace dss {

std::string py_json_dumps(const OrderedJson& value, bool ensure_ascii);

}  // namespace dss
