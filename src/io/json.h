// nlohmann::json under the project name, plus checked parses that return Status.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"
#include "io/indexed_ordered_map.h"

namespace dss {

using Json = nlohmann::json;
// Key order kept (prompts render JSON as the client wrote it); key lookup hashed, see
// indexed_ordered_map.h.
using OrderedJson = nlohmann::basic_json<IndexedOrderedMap>;

// Nesting limit of JSON that comes from outside (request bodies, tool-call arguments, model
// output parsed as JSON). Every walk of such a value (dump, copy, compare, chat rendering) is
// recursive, so one limit at the parse bounds all of them; 128 levels is serde_json's default and
// far beyond any real tool schema.
inline constexpr int kMaxJsonDepth = 128;

// Parses `text`; errors are prefixed with `what` (usually the file name).
Result<Json> parse_json(const std::string& text, const std::string& what);
// Reads and parses a JSON file; errors name the path.
Result<Json> load_json_file(const std::string& path);

// Parses untrusted JSON with at most `max_depth` nested arrays/objects. `what` is the document's
// path in the request ("" for the request body itself, "messages[0].tool_calls[1].function.
// arguments" for JSON text inside it). Errors name the offending value's path
// ("tools[0].function.parameters: nested deeper than 128 levels") or the document ("body: not
// valid JSON (syntax error at byte 17)"), so the server's 400 names the field. The parse itself is
// iterative: a too-deep input fails cleanly whatever its depth.
Result<OrderedJson> parse_json_bounded(std::string_view text, const std::string& what,
                                       int max_depth = kMaxJsonDepth);

}  // namespace dss
