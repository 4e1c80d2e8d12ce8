#include "common/status.h"

namespace gpunex {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kValidationFailed:
      return "validation_failed";
    case StatusCode::kUnauthenticated:
      return "unauthenticated";
    case StatusCode::kPermissionDenied:
      return "permission_denied";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kAlreadyExists:
      return "already_exists";
    case StatusCode::kFailedPrecondition:
      return "failed_precondition";
    case StatusCode::kGone:
      return "gone";
    case StatusCode::kResourceExhausted:
      return "rate_limited";
    case StatusCode::kPayloadTooLarge:
      return "payload_too_large";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kAborted:
      return "aborted";
    case StatusCode::kOutOfRange:
      return "out_of_range";
    case StatusCode::kOutcomeUnknown:
      return "outcome_unknown";
    case StatusCode::kInternal:
      return "internal";
  }
  return "internal";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s = std::string(StatusCodeName(code_)) + ": " + message_;
  for (const auto& [field, msg] : fields_) s += "; " + field + ": " + msg;
  return s;
}

}  // namespace gpunex
