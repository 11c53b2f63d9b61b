// Named benchmark workloads: default lengths and endpoint, each overridable by flags.
//   chat-256      256 in, 256 out, chat
//   doc-2k        2048 in, 256 out, completions
//   doc-32k       32768 in, 256 out, completions
//   stream-1k-2k  1024 in, 2048 out, chat
//   custom        no defaults: --input-len and --output-len are required (chat)
#pragma once

#include <optional>
#include <string>

#include "apps/bench/runner.h"
#include "base/status.h"

namespace dss::bench {

struct Scenario {
  std::string name;
  std::optional<int32_t> input_len, output_len;
  ApiEndpoint endpoint = ApiEndpoint::kChat;
};

Result<Scenario> find_scenario(const std::string& name);
const char* endpoint_name(ApiEndpoint e);  // "chat" | "completions"

}  // namespace dss::bench
