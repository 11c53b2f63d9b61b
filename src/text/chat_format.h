// ChatFormat: which DeepSeek prompt/output format a model speaks (deepseek-reference.md §4).
//   kV3   DeepSeek-V3 / V3-0324 / R1-style templates: fenced-JSON tool calls (§4.2)
//   kV31  V3.1, V3.1-Terminus, V3.2-Exp: thinking switch, `name<｜tool▁sep｜>{json}` (§4.3, §4.4)
//   kV32  V3.2 final: Python encoder, DSML tool calls (§4.5)
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "io/json.h"

namespace dss {

enum class ChatFormat { kV3, kV31, kV32 };

// "v3" | "v31" | "v32" (also "v3.1", "v3.2"); nullopt otherwise.
std::optional<ChatFormat> parse_chat_format(std::string_view name);
const char* chat_format_name(ChatFormat f);

// Picks the format from the tokenizer's chat_template text (DSML marker -> V3.2, a thinking
// switch -> V3.1, otherwise V3) or, when the tokenizer has no template (V3.2 final ships none),
// from config.json's model_type ("deepseek_v32" -> V3.2). `model_config` may be null.
ChatFormat detect_chat_format(const std::string& chat_template, const Json* model_config);

}  // namespace dss
