// Status and Result<T>: the first failure tier (input-caused, recoverable errors).
//
// Contract: functions that can fail because of their input (a file, a request, a flag) return
// Status or Result<T> and never throw across a module boundary. The message names what was wrong
// ("config.json: kv_lora_rank missing"), so it can be shown to a user as is.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "base/str_cat.h"

namespace dss {

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  static Status ok() { return Status(); }
  template <typename... Args>
  static Status error(const Args&... args) {
    Status s;
    s.failed_ = true;
    s.message_ = str_cat(args...);
    return s;
  }
  bool is_ok() const { return !failed_; }
  explicit operator bool() const { return !failed_; }
  const std::string& message() const { return message_; }
  // Prepends context: "file.safetensors: " + message.
  Status with_context(const std::string& prefix) const {
    if (!failed_) return *this;
    return Status::error(prefix, message_);
  }

 private:
  bool failed_ = false;
  std::string message_;
};

// Result<T> holds a T or a failed Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.is_ok()) status_ = Status::error("internal: Result built from an ok Status");
  }
  bool is_ok() const { return value_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const { return status_; }
  const std::string& message() const { return status_.message(); }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace dss

#define DSS_CONCAT_INNER_(a, b) a##b
#define DSS_CONCAT_(a, b) DSS_CONCAT_INNER_(a, b)

// DSS_RETURN_IF_ERROR(status_expr): returns the failed Status from the enclosing function.
#define DSS_RETURN_IF_ERROR(expr)                 \
  do {                                            \
    ::dss::Status dss_status_ = (expr);           \
    if (!dss_status_.is_ok()) return dss_status_; \
  } while (0)

// DSS_ASSIGN_OR_RETURN(lhs, result_expr): `lhs = value` or return the failed Status.
#define DSS_ASSIGN_OR_RETURN(lhs, expr) \
  DSS_ASSIGN_OR_RETURN_IMPL_(DSS_CONCAT_(dss_result_, __LINE__), lhs, expr)
#define DSS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.is_ok()) return tmp.status();           \
  lhs = std::move(tmp).value()
