// What other folders read of the users: an account's address, users' names. Each read is
// in the caller's transaction and includes disabled users (their payouts, their addresses
// still name them).
//
// Thread-safety: functions over the caller's transaction.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"

namespace gpunex::platform::accounts {

// The account's own address, in lower case; none when there is no such user. notify's
// email verification reads it through VerifierOptions::account_email: notify cannot
// depend on this folder, which depends on it.
StatusOr<std::optional<std::string>> AccountEmail(store::Tx& tx, const std::string& user_id);

// A user as an operator finds them.
struct UserSummary {
  std::string id;
  std::string email;
  std::string name;
  Timestamp created_at;
  bool disabled = false;
};

// The names of the users among `ids` that exist, by id.
StatusOr<std::map<std::string, std::string>> UserNames(store::Tx& tx,
                                                       const std::vector<std::string>& ids);
// The users among `ids` that exist, by id (one read for the lot).
StatusOr<std::map<std::string, UserSummary>> UserSummaries(store::Tx& tx,
                                                           const std::vector<std::string>& ids);

// The longest search text, and the most users one search gives.
inline constexpr size_t kMaxUserSearchChars = 254;
inline constexpr int kMaxUserSearchResults = 50;

// Users whose email or name holds `text` (any case, any position), by email, at most
// `limit`.
StatusOr<std::vector<UserSummary>> SearchUsers(store::Tx& tx, std::string_view text, int limit);

// One user as an operator reads them, with their roles (sorted); none when no such user.
struct UserDetail {
  UserSummary summary;
  std::vector<std::string> roles;
};
StatusOr<std::optional<UserDetail>> FindUserDetail(store::Tx& tx, const std::string& user_id);

// The user whose email is `email` (any case); none when nobody has it.
StatusOr<std::optional<std::string>> UserIdByEmail(store::Tx& tx, std::string_view email);

}  // namespace gpunex::platform::accounts
