// nlohmann::json under the project name, plus a checked parse that returns Status.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace dss {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// Parses `text`; errors are prefixed with `what` (usually the file name).
Result<Json> parse_json(const std::string& text, const std::string& what);
// Reads and parses a JSON file; errors name the path.
Result<Json> load_json_file(const std::string& path);

}  // namespace dss
