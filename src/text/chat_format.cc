#include "text/chat_format.h"

namespace dss {

std::optional<ChatFormat> parse_chat_format(std::string_view name) {
  if (name == "v3") return ChatFormat::kV3;
  if (name == "v31" || name == "v3.1") return ChatFormat::kV31;
  if (name == "v32" || name == "v3.2") return ChatFormat::kV32;
  return std::nullopt;
}

const char* chat_format_name(ChatFormat f) {
  switch (f) {
    case ChatFormat::kV3:
      return "v3";
    case ChatFormat::kV31:
      return "v31";
    case ChatFormat::kV32:
      return "v32";
  }
  return "?";
}

ChatFormat detect_chat_format(const std::string& chat_template, const Json* model_config) {
  if (!chat_template.empty()) {
    if (chat_template.find("｜DSML｜") != std::string::npos) return ChatFormat::kV32;
    if (chat_template.find("thinking") != std::string::npos ||
        chat_template.find("</think>") != std::string::npos) {
      return ChatFormat::kV31;
    }
    return ChatFormat::kV3;
  }
  if (model_config != nullptr && model_config->is_object() &&
      model_config->value("model_type", "") == "deepseek_v32") {
    return ChatFormat::kV32;
  }
  return ChatFormat::kV3;
}

}  // namespace dss
