#include "server/api_error.h"

#include <cctype>

#include "io/json.h"

namespace dss {

namespace {

const char* type_for_status(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
      return "service_unavailable";
    default:
      return status >= 500 ? "internal_error" : "invalid_request_error";
  }
}

}  // namespace

ApiError ApiError::from_status(const Status& s) {
  return bad_request(s.message(), field_of_message(s.message()));
}

std::string ApiError::to_json() const {
  OrderedJson j;
  j["error"]["message"] = message;
  j["error"]["type"] = type.empty() ? type_for_status(status) : type;
  j["error"]["param"] = param.empty() ? OrderedJson(nullptr) : OrderedJson(param);
  j["error"]["code"] = status;
  return j.dump();
}

std::string field_of_message(const std::string& message) {
  size_t n = 0;
  while (n < message.size() &&
         (std::isalnum(static_cast<unsigned char>(message[n])) || message[n] == '_' ||
          message[n] == '.' || message[n] == '[' || message[n] == ']'))
    ++n;
  if (n == 0 || n == message.size()) return "";
  if (message[n] == ':' || message.compare(n, 6, " must ") == 0) return message.substr(0, n);
  return "";
}

}  // namespace dss
