// Accounts (ACC-1..4): users, roles, sessions, API keys, log-in throttling and the audit
// log of security events.
//
// Credentials are 256-bit random secrets ("gpx_s_..." session tokens, "gpx_k_..." API
// keys; agent tokens "gpx_a_..." live in providers/) shown once and stored only as their
// SHA-256. Passwords are stored as Argon2id hashes (libsodium).
//
// The tables are accounts_store.h's; other folders use the functions that take the caller's
// transaction (Audit, GrantRole, LoadUser here; directory.h: addresses, names) for them.
//
// Thread-safety: Accounts is immutable after construction and safe to share.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/accounts/password_gate.h"
#include "platform/accounts/password_policy.h"
#include "platform/store/db.h"

namespace gpunex::platform::notify {
class EmailVerifier;
}  // namespace gpunex::platform::notify

namespace gpunex::platform::accounts {

inline constexpr std::string_view kRoleCustomer = "customer";
inline constexpr std::string_view kRoleProvider = "provider";
inline constexpr std::string_view kRoleAdmin = "admin";

struct User {
  std::string id;
  std::string email;
  std::string name;
  std::vector<std::string> roles;  // sorted
  Timestamp created_at;

  bool HasRole(std::string_view role) const;
};

// What an API key may do (docs/security.md): read (GET), write (everything else),
// provider (the provider role's routes), admin (the admin role's). A key acts with its
// owner's roles less those its scopes leave out; sessions have every scope.
inline constexpr std::string_view kScopeRead = "read";
inline constexpr std::string_view kScopeWrite = "write";
inline constexpr std::string_view kScopeProvider = "provider";
inline constexpr std::string_view kScopeAdmin = "admin";

// Who is making a request.
struct Principal {
  enum class Via { kBearerSession, kCookieSession, kApiKey };
  User user;  // with an API key: only the roles its scopes allow
  Via via = Via::kBearerSession;
  std::string credential_id;  // session id or API key id
  std::string csrf_token;     // sessions only
  std::string ip;
  bool can_write = true;  // false: an API key without the write scope
  // An API key's scopes (kScopeRead ...), in that order; empty for a session.
  std::vector<std::string> scopes;

  bool IsAdmin() const { return user.HasRole(kRoleAdmin); }
  bool IsApiKey() const { return via == Via::kApiKey; }
  // Whether the credential allows `scope`: a session allows every scope.
  bool HasScope(std::string_view scope) const;
  // Whether the caller acts as the provider `provider_id`: it is that account, with the
  // provider role (an API key without the provider scope acts as a customer).
  bool IsProvider(std::string_view provider_id) const {
    return user.id == provider_id && user.HasRole(kRoleProvider);
  }
};

// Log-in throttling, within login_window_minutes: an address that failed
// login_max_failures times for an email is refused for it; any address that failed
// login_max_failures_ip times in all is refused for every email; and once an email failed
// login_max_failures times from anywhere, its other addresses wait between attempts, 1 s
// after the next failure and twice as long after each one more, up to
// login_max_delay_s. So a stranger's wrong passwords slow the owner down but never lock
// them out.
struct AccountsOptions {
  int session_ttl_hours = 168;
  // A session unused for this long has ended (its last use is kept to the minute).
  int session_idle_minutes = 12 * 60;
  int login_max_failures = 5;
  int login_max_failures_ip = 50;
  int login_max_delay_s = 60;
  int login_window_minutes = 15;
  // Password hashes at once, and requests that may wait for one (password_gate.h).
  int password_hash_concurrency = 1;
  int password_hash_waiting = 4;
  int password_hash_max_wait_ms = 5000;
  unsigned long long argon2_opslimit = 2;
  size_t argon2_memlimit_bytes = 64ull << 20;
  // Sign-ups one client address may make per hour (a token bucket with this burst; the
  // API refuses beyond with 429).
  int signups_per_address_per_hour = 20;
  // How long a credential, once checked against the store, is taken without asking it
  // again (credential_cache.h): a revocation on another instance of a cluster takes
  // effect within this; on this one at once. Zero: every request asks the store.
  Duration credential_cache_ttl = kOneSecond;
  size_t credential_cache_entries = 10000;
  const Clock* clock = &SystemClock();
  // Sends the link that verifies a new account's address, and tells the owner of a taken
  // one; null: neither (tools, tests).
  const notify::EmailVerifier* verifier = nullptr;
};

struct SignUpRequest {
  std::string email;
  std::string password;
  std::string name;
};

struct LoginRequest {
  std::string email;
  std::string password;
};

struct LoginResult {
  std::string token;       // shown once
  std::string csrf_token;  // to send as X-CSRF-Token with cookie-authenticated writes
  Timestamp expires_at;
  User user;
};

struct ApiKey {
  std::string id;
  std::string name;
  std::string prefix;  // first characters of the key, to recognise it in lists
  Timestamp created_at;
  std::optional<Timestamp> last_used_at;
  std::optional<Timestamp> revoked_at;
  std::vector<std::string> scopes;  // in the order read, write, provider, admin
};

// A session as its owner sees it in the sessions list.
struct SessionInfo {
  std::string id;
  Timestamp created_at;
  Timestamp last_seen_at;
  Timestamp expires_at;
  std::string ip;
  std::string user_agent;
  bool current = false;  // the one that made the request
};

struct ChangePasswordRequest {
  std::string current_password;
  std::string new_password;
};

// A new API key with its secret, which is shown only this once.
struct NewApiKey {
  ApiKey key;
  std::string secret;
};

// What an audit event says beyond its action and subject: short named strings.
using AuditDetail = std::map<std::string, std::string>;

// Audit log entry, written in the caller's transaction.
Status Audit(store::Tx& tx, Timestamp at, const std::optional<std::string>& actor_user_id,
             std::string_view action, std::string_view subject, std::string_view ip,
             const AuditDetail& detail = {});

// Grants `role` (idempotent), in the caller's transaction, and audits it.
// The ids of the users that hold `role`, by id.
StatusOr<std::vector<std::string>> UsersWithRole(store::Tx& tx, std::string_view role);
Status GrantRole(store::Tx& tx, Timestamp at, const std::string& user_id, std::string_view role,
                 const std::string& granted_by);

// Loads an enabled user with roles; NotFound when absent or disabled.
StatusOr<User> LoadUser(store::Tx& tx, const std::string& user_id);

// Validates an email address (RFC 5321 sizes, a practical subset of syntax). Returns an
// error message, or "" when valid. Normalises to lower case in `*normalized`.
std::string CheckEmail(std::string_view email, std::string* normalized);

class CredentialCache;

class Accounts {
 public:
  Accounts(store::Database& db, AccountsOptions options);
  ~Accounts();

  const AccountsOptions& options() const { return options_; }

  // A new user (role customer), whose address gets a verification link. The name loses
  // its invisible characters (common/utf8.h StripInvisible) and outer spaces; the password
  // must pass CheckPasswordStrength. Field errors for each bad field. A taken email gets
  // the same answer, a user that is never stored, while its owner is told by email: the
  // answer does not say which addresses have accounts.
  StatusOr<User> SignUp(const SignUpRequest& req, std::string_view ip);

  // A new session. kUnauthenticated for a wrong email or password (the same answer for
  // both); kResourceExhausted while throttled (AccountsOptions).
  StatusOr<LoginResult> Login(const LoginRequest& req, std::string_view ip,
                              std::string_view user_agent);

  // Revokes the session that authenticated the principal (API keys: nothing to end).
  Status Logout(const Principal& p);

  // Resolves a bearer credential (session token or API key). kUnauthenticated when the
  // token is unknown, expired or revoked; agent tokens are refused here.
  StatusOr<Principal> Authenticate(std::string_view token, bool from_cookie, std::string_view ip);

  // `name`: 1 to 100 characters; `scopes`: a non-empty subset of read, write, provider,
  // admin (provider and admin only for users with that role). Only a session may create
  // credentials: an API key cannot (kPermissionDenied), so a stolen key cannot outlive
  // its revocation through another.
  StatusOr<NewApiKey> CreateApiKey(const Principal& p, const std::string& name,
                                   const std::vector<std::string>& scopes);
  StatusOr<std::vector<ApiKey>> ListApiKeys(const Principal& p);
  Status RevokeApiKey(const Principal& p, const std::string& key_id);

  // The caller's live sessions, newest first.
  StatusOr<std::vector<SessionInfo>> ListSessions(const Principal& p);
  // Ends one of the caller's sessions (kNotFound when it is not theirs or not live).
  Status RevokeSession(const Principal& p, const std::string& session_id);
  // Ends every session of the caller but the one making the request (all of them when
  // the caller uses an API key); how many ended.
  StatusOr<int64_t> RevokeOtherSessions(const Principal& p);
  // Sets a new password (a session only) after checking the current one, and ends every
  // other session of the user. Field errors: "current_password" when it is wrong,
  // "new_password" for the length rules.
  Status ChangePassword(const Principal& p, const ChangePasswordRequest& req);

  // Whether `password` is the caller's, for changes that need it again (PAY-5: the payout
  // method). Fails with kUnauthenticated when the account is disabled.
  StatusOr<bool> CheckPassword(const Principal& p, std::string_view password) const;

  // For `gpunexd admin create`: creates the user if needed (or sets the password of the
  // one that exists) and grants admin.
  StatusOr<User> CreateAdmin(std::string_view email, std::string_view password,
                             std::string_view name);

  // Argon2id hash / verification with the configured cost, one of the gate's places each
  // (kResourceExhausted when the gate is full).
  StatusOr<std::string> HashPassword(std::string_view password) const;
  StatusOr<bool> VerifyPassword(const std::string& hash, std::string_view password) const;

  // Bounds the API checks while decoding requests.
  static constexpr size_t kMaxEmail = 254;
  static constexpr size_t kMaxPassword = 256;
  static constexpr size_t kMinPassword = kMinPasswordLength;
  static constexpr size_t kMaxName = 200;
  static constexpr size_t kMaxApiKeyName = 100;

 private:
  store::Database& db_;
  AccountsOptions options_;
  std::unique_ptr<PasswordGate> gate_;
  std::unique_ptr<CredentialCache> credentials_;
  std::string dummy_hash_;  // verified against on unknown emails, so timing does not tell
};

}  // namespace gpunex::platform::accounts
