// ApiError: an OpenAI-style error response, {"error": {"message", "type", "param", "code"}}.
// The first failure tier of the server: every bad request ends as one of these, never a crash.
#pragma once

#include <string>

#include "base/status.h"

namespace dss {

struct ApiError {
  int status = 400;  // HTTP status
  std::string message;
  std::string param;  // the offending request field, "" when none
  std::string type;   // "" = derived from status (invalid_request_error, authentication_error, ...)

  static ApiError bad_request(std::string message, std::string param = "") {
    return ApiError{400, std::move(message), std::move(param), ""};
  }
  // A 400 from a validation Status; param is the field its message starts with.
  static ApiError from_status(const Status& s);
  std::string to_json() const;
};

// The field named by a validation message "field: why" or "field must ..." ("" if none).
std::string field_of_message(const std::string& message);

}  // namespace dss
