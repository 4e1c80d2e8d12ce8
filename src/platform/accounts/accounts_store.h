// The accounts folder's tables and the only SQL that touches them: users, user_roles,
// sessions, api_keys, login_failures, audit_events. Other folders reach these through
// accounts.h, never here.
//
// An AccountsStore is a view of one transaction: every method runs in it and fails with
// the transaction's status.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::accounts {

struct UserRow {
  std::string id;
  std::string email;  // normalised to lower case
  std::string name;
  std::string password_hash;  // Argon2id (libsodium string form)
  Timestamp created_at;
  bool disabled = false;
};

struct SessionRow {
  std::string id;
  std::string user_id;
  std::string token_hash;  // SHA-256 hex of the bearer token
  std::string csrf_token;
  Timestamp created_at;
  Timestamp expires_at;
  std::optional<Timestamp> revoked_at;
  std::string ip;
  std::string user_agent;
  Timestamp last_seen_at;  // when a request last used it (to the minute); created_at at first
};

struct ApiKeyRow {
  std::string id;
  std::string user_id;
  std::string name;
  std::string token_hash;
  std::string token_prefix;
  Timestamp created_at;
  std::optional<Timestamp> last_used_at;
  std::optional<Timestamp> revoked_at;
  std::string scopes;  // comma-separated: read, write, provider, admin
};

struct AuditRow {
  std::string id;
  Timestamp at;
  std::optional<std::string> actor_user_id;
  std::string action;
  std::string subject;
  std::string ip;
  std::string detail_json;  // an object of strings
};

class AccountsStore {
 public:
  explicit AccountsStore(store::Tx& tx) : tx_(tx) {}

  StatusOr<std::optional<UserRow>> FindUserByEmail(const std::string& email);
  // Enabled users only.
  StatusOr<std::optional<UserRow>> FindActiveUser(const std::string& user_id);
  // Disabled users too.
  StatusOr<std::optional<UserRow>> FindUser(const std::string& user_id);
  // The users among `ids` that exist (disabled ones included), in no particular order.
  StatusOr<std::vector<UserRow>> UsersOf(const std::vector<std::string>& ids);
  // Users whose email or name holds `text` (lower case, any position), by email; at most
  // `limit`.
  StatusOr<std::vector<UserRow>> SearchUsers(const std::string& text, int limit);
  Status InsertUser(const UserRow& u);  // kAlreadyExists for a taken email
  Status SetPasswordHash(const std::string& user_id, const std::string& hash);
  StatusOr<std::vector<std::string>> RolesOf(const std::string& user_id);     // sorted
  StatusOr<std::vector<std::string>> UsersWithRole(const std::string& role);  // by id
  // Whether the role was new.
  StatusOr<bool> InsertRole(const std::string& user_id, const std::string& role, Timestamp at,
                            const std::string& granted_by);

  Status InsertSession(const SessionRow& s);
  // A session that is neither revoked nor expired at `now`, and was used after `idle_since`.
  StatusOr<std::optional<SessionRow>> FindLiveSession(const std::string& token_hash, Timestamp now,
                                                      Timestamp idle_since);
  // The user's sessions that are live at `now` (as FindLiveSession), newest first.
  StatusOr<std::vector<SessionRow>> LiveSessionsOf(const std::string& user_id, Timestamp now,
                                                   Timestamp idle_since);
  Status RevokeSession(const std::string& session_id, Timestamp at);
  // Revokes the user's session `session_id`; false when it was not theirs or not live.
  StatusOr<bool> RevokeSessionOf(const std::string& user_id, const std::string& session_id,
                                 Timestamp at);
  // Revokes every live session of the user except `keep`; how many.
  StatusOr<int64_t> RevokeOtherSessions(const std::string& user_id, const std::string& keep,
                                        Timestamp at);
  Status TouchSession(const std::string& session_id, Timestamp at);

  Status InsertApiKey(const ApiKeyRow& k);
  StatusOr<int64_t> CountActiveApiKeys(const std::string& user_id);
  StatusOr<std::optional<ApiKeyRow>> FindActiveApiKey(const std::string& token_hash);
  StatusOr<std::vector<ApiKeyRow>> ListApiKeys(const std::string& user_id);  // oldest first
  // Whether an active key of that user was revoked.
  StatusOr<bool> RevokeApiKey(const std::string& key_id, const std::string& user_id, Timestamp at);
  Status TouchApiKey(const std::string& key_id, Timestamp at);

  // Failed log-ins within the window, by email and by client address.
  StatusOr<int64_t> CountLoginFailuresByEmail(const std::string& email, Timestamp since);
  StatusOr<int64_t> CountLoginFailuresByIp(const std::string& ip, Timestamp since);
  StatusOr<int64_t> CountLoginFailuresByEmailAndIp(const std::string& email, const std::string& ip,
                                                   Timestamp since);
  // The time of the email's latest failure after `since`; none without one.
  StatusOr<std::optional<Timestamp>> LastLoginFailure(const std::string& email, Timestamp since);
  Status InsertLoginFailure(const std::string& email, const std::string& ip, Timestamp at);
  Status ClearLoginFailures(const std::string& email);

  Status InsertAudit(const AuditRow& a);

 private:
  store::Tx& tx_;
};

// The folder's migrations (store/migrations.h).
std::vector<store::Migration> AccountsMigrations();

}  // namespace gpunex::platform::accounts
