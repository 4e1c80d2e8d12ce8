// What other folders read of the users: an account's address, users' names. Each read is
// in the caller's transaction and includes disabled users (their payouts, their addresses
// still name them).
//
// Thread-safety: functions over the caller's transaction.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "platform/store/db.h"

namespace gpunex::platform::accounts {

// The account's own address, in lower case; none when there is no such user. notify's
// email verification reads it through VerifierOptions::account_email: notify cannot
// depend on this folder, which depends on it.
StatusOr<std::optional<std::string>> AccountEmail(store::Tx& tx, const std::string& user_id);

// The names of the users among `ids` that exist, by id.
StatusOr<std::map<std::string, std::string>> UserNames(store::Tx& tx,
                                                       const std::vector<std::string>& ids);

}  // namespace gpunex::platform::accounts
