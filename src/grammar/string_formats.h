// JSON Schema string formats that a regular grammar can express exactly, as regexes (in the
// regex_parser.h subset) matching the strings ajv-formats' "full" mode accepts, or a subset of
// them: date (RFC 3339 full-date, days per month and leap years checked), time (with a required
// offset, no leap second), date-time (date "T" time), email (ajv-formats' full-mode pattern),
// uuid (without the "urn:uuid:" prefix). Fractional seconds have at most 9 digits.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dss::grammar {

// The regex for `format`, or nullopt when the format is not supported.
std::optional<std::string> string_format_regex(std::string_view format);

}  // namespace dss::grammar
