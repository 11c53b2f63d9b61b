#include "apps/bench/scenario.h"

namespace dss::bench {

Result<Scenario> find_scenario(const std::string& name) {
  if (name == "chat-256") return Scenario{name, 256, 256, ApiEndpoint::kChat};
  if (name == "doc-2k") return Scenario{name, 2048, 256, ApiEndpoint::kCompletions};
  if (name == "doc-32k") return Scenario{name, 32768, 256, ApiEndpoint::kCompletions};
  if (name == "stream-1k-2k") return Scenario{name, 1024, 2048, ApiEndpoint::kChat};
  if (name == "custom") return Scenario{name, std::nullopt, std::nullopt, ApiEndpoint::kChat};
  return Status::error("--scenario: '", name,
                       "' is not one of chat-256, doc-2k, doc-32k, stream-1k-2k, custom");
}

const char* endpoint_name(ApiEndpoint e) {
  return e == ApiEndpoint::kChat ? "chat" : "completions";
}

}  // namespace dss::bench
