#include "grammar/string_formats.h"

namespace dss::grammar {
namespace {

constexpr const char* kDate =
    "(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]"
    "[0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:["
    "02468][048]|[13579][26])00)-02-29)";
constexpr const char* kTime =
    "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?(?:[zZ]|[+-](?:[01][0-9]|2[0-3]"
    "):[0-5][0-9])";
constexpr const char* kEmail =
    "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-zA-Z0-9](?:["
    "a-zA-Z0-9-]*[a-zA-Z0-9])?\\.)+[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?";
constexpr const char* kUuid = "[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}";

}  // namespace

std::optional<std::string> string_format_regex(std::string_view format) {
  if (format == "date") return std::string(kDate);
  if (format == "time") return std::string(kTime);
  if (format == "date-time") return std::string(kDate) + "T" + kTime;
  if (format == "email") return std::string(kEmail);
  if (format == "uuid") return std::string(kUuid);
  return std::nullopt;
}

}  // namespace dss::grammar
