// The payment file writers' input errors: kInvalidArgument naming the input field
// ("lines[3].iban has wrong check digits: ..."), with the field in the Status's fields
// too, so that a caller can tell which payout is wrong.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "common/status.h"

namespace gpunex::platform::bank::internal {

inline Status InputError(const std::string& path, const std::string& why) {
  return Status(StatusCode::kInvalidArgument, path + " " + why, FieldErrors{{path, why}});
}

// A details.h check's one-field error (kValidationFailed: the user's input) as an input
// error of a file (kInvalidArgument: the caller's).
inline Status AsInputError(const Status& st) {
  if (st.fields().empty()) return Status(StatusCode::kInvalidArgument, st.message());
  const auto& [path, why] = *st.fields().begin();
  return InputError(path, why);
}

}  // namespace gpunex::platform::bank::internal
