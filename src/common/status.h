// Status and StatusOr: the error values that cross module boundaries in gpunex.
//
// A Status is either OK or carries a canonical code, a human sentence and, for
// validation failures, a map from field path ("gpus[0].quantity") to what is wrong
// with that field. Exceptions never cross a module boundary; adapters that call
// throwing libraries convert to Status. One place (platform/api/errors) maps codes
// to HTTP statuses.
//
// Thread-safety: values; copy freely.
#pragma once

#include <cassert>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace gpunex {

enum class StatusCode {
  kOk,
  kInvalidArgument,     // malformed request (HTTP 400)
  kValidationFailed,    // well-formed but fields are wrong (HTTP 422)
  kUnauthenticated,     // no or bad credentials (HTTP 401)
  kPermissionDenied,    // authenticated but not allowed (HTTP 403)
  kNotFound,            // (HTTP 404)
  kAlreadyExists,       // (HTTP 409)
  kFailedPrecondition,  // wrong state for the operation (HTTP 409)
  kGone,                // it existed and never will again, e.g. an ended rental (HTTP 410)
  kResourceExhausted,   // rate limited (HTTP 429)
  kPayloadTooLarge,     // (HTTP 413)
  kUnavailable,         // transient: retry later (HTTP 503)
  kAborted,             // transaction conflict: the caller may retry
  kOutOfRange,          // a value beyond what can be represented, e.g. money overflow (HTTP 422)
  // The operation may or may not have taken effect (a connection lost during COMMIT):
  // the caller must find out, e.g. by reading again, before it acts on either outcome
  // (HTTP 503).
  kOutcomeUnknown,
  kInternal,  // bug or broken dependency (HTTP 500)
};

// Field path -> message, ordered so that error bodies are deterministic.
using FieldErrors = std::map<std::string, std::string>;

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  Status(StatusCode code, std::string message, FieldErrors fields)
      : code_(code), message_(std::move(message)), fields_(std::move(fields)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const FieldErrors& fields() const { return fields_; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  FieldErrors fields_;
};

// Short constructors for the canonical codes.
inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status Gone(std::string m) { return {StatusCode::kGone, std::move(m)}; }
inline Status PermissionDenied(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
inline Status Unauthenticated(std::string m) {
  return {StatusCode::kUnauthenticated, std::move(m)};
}
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status OutcomeUnknown(std::string m) { return {StatusCode::kOutcomeUnknown, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status ValidationFailed(FieldErrors fields) {
  return {StatusCode::kValidationFailed, "the request has invalid fields", std::move(fields)};
}
// One invalid field.
inline Status FieldError(std::string field, std::string message) {
  return ValidationFailed(FieldErrors{{std::move(field), std::move(message)}});
}

const char* StatusCodeName(StatusCode code);

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }
  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace gpunex

// Returns early from the enclosing function when `expr` (a Status) is not OK.
#define GPUNEX_RETURN_IF_ERROR(expr) \
  do {                               \
    ::gpunex::Status _st = (expr);   \
    if (!_st.ok()) return _st;       \
  } while (0)

#define GPUNEX_CONCAT_INNER(a, b) a##b
#define GPUNEX_CONCAT(a, b) GPUNEX_CONCAT_INNER(a, b)
// Declares `lhs` from a StatusOr expression, or returns its Status when not OK.
#define GPUNEX_ASSIGN_OR_RETURN(lhs, expr) \
  GPUNEX_ASSIGN_OR_RETURN_IMPL(GPUNEX_CONCAT(_sor_, __LINE__), lhs, expr)
#define GPUNEX_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
