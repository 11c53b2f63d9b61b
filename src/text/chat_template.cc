#include "text/chat_template.h"

namespace dss {

Result<std::string> render_chat(ChatFormat format, const ChatRequest& req,
                                const ChatTemplateOptions& opts) {
  switch (format) {
    case ChatFormat::kV3:
      return render_chat_v3(req);
    case ChatFormat::kV31:
      return render_chat_v31(req, opts.inject_tool_prompt);
    case ChatFormat::kV32:
      return render_chat_v32(req);
  }
  return Status::error("unknown chat format");
}

}  // namespace dss
