#include "platform/accounts/accounts_store.h"

#include <algorithm>

#include "common/ids.h"
#include "platform/accounts/credential_cache.h"
#include "platform/store/rows.h"
#include "platform/store/sql_literal.h"

namespace gpunex::platform::accounts {
namespace {

const store::RowMapper<UserRow>& UserRows() {
  static const auto* const m = new store::RowMapper<UserRow>({
      {"id", &UserRow::id},
      {"email", &UserRow::email},
      {"name", &UserRow::name},
      {"password_hash", &UserRow::password_hash},
      {"created_at", &UserRow::created_at},
      {"disabled", &UserRow::disabled},
  });
  return *m;
}

const store::RowMapper<SessionRow>& SessionRows() {
  using S = SessionRow;
  static const auto* const m = new store::RowMapper<S>({
      {"id", &S::id},
      {"user_id", &S::user_id},
      {"token_hash", &S::token_hash},
      {"csrf_token", &S::csrf_token},
      {"created_at", &S::created_at},
      {"expires_at", &S::expires_at},
      {"revoked_at", &S::revoked_at},
      {"ip", &S::ip},
      {"user_agent", &S::user_agent},
      {"last_seen_at",
       [](S& s, const store::Cell& c) {
         // created_at (converted before) where the row is older than the column (0).
         s.last_seen_at = std::max(c.Time(), s.created_at);
       }},
  });
  return *m;
}

const store::RowMapper<ApiKeyRow>& ApiKeyRows() {
  static const auto* const m = new store::RowMapper<ApiKeyRow>({
      {"id", &ApiKeyRow::id},
      {"user_id", &ApiKeyRow::user_id},
      {"name", &ApiKeyRow::name},
      {"token_hash", &ApiKeyRow::token_hash},
      {"token_prefix", &ApiKeyRow::token_prefix},
      {"created_at", &ApiKeyRow::created_at},
      {"last_used_at", &ApiKeyRow::last_used_at},
      {"revoked_at", &ApiKeyRow::revoked_at},
      {"scopes", &ApiKeyRow::scopes},
  });
  return *m;
}

store::Value OptTimeValue(const std::optional<Timestamp>& t) {
  return t ? store::Value(ToUnixMicros(*t)) : store::Value(nullptr);
}

// `sql` selects COUNT(*) AS n.
StatusOr<int64_t> CountOf(store::Tx& tx, const std::string& sql,
                          const std::vector<store::Value>& params) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(sql, params));
  return rows.at(0)["n"].Int();
}

}  // namespace

StatusOr<std::optional<UserRow>> AccountsStore::FindUserByEmail(const std::string& email) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query(std::string("SELECT ") + UserRows().Select() +
                                                          " FROM users WHERE email = ?",
                                                      {email}));
  return UserRows().First(rows);
}

StatusOr<std::optional<UserRow>> AccountsStore::FindActiveUser(const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + UserRows().Select() +
                                        " FROM users WHERE id = ? AND disabled = 0",
                                    {user_id}));
  return UserRows().First(rows);
}

StatusOr<std::optional<UserRow>> AccountsStore::FindUser(const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query(std::string("SELECT ") + UserRows().Select() +
                                                          " FROM users WHERE id = ?",
                                                      {user_id}));
  return UserRows().First(rows);
}

StatusOr<std::vector<UserRow>> AccountsStore::SearchUsers(const std::string& text, int limit) {
  // LIKE's wildcards in the text match themselves.
  std::string pattern = "%";
  for (char c : text) {
    if (c == '%' || c == '_' || c == '\\') pattern += '\\';
    pattern += c;
  }
  pattern += '%';
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(std::string("SELECT ") + UserRows().Select() +
                    " FROM users WHERE email LIKE ? ESCAPE '\\' OR LOWER(name) LIKE ? ESCAPE "
                    "'\\' ORDER BY email LIMIT ?",
                {pattern, pattern, int64_t{limit}}));
  return UserRows().Decode(rows);
}

StatusOr<std::vector<UserRow>> AccountsStore::UsersOf(const std::vector<std::string>& ids) {
  std::vector<UserRow> out;
  constexpr size_t kChunk = 400;
  for (size_t start = 0; start < ids.size(); start += kChunk) {
    const size_t n = std::min(kChunk, ids.size() - start);
    std::vector<store::Value> params(ids.begin() + static_cast<std::ptrdiff_t>(start),
                                     ids.begin() + static_cast<std::ptrdiff_t>(start + n));
    GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                            tx_.Query(std::string("SELECT ") + UserRows().Select() +
                                          " FROM users WHERE id IN (" + store::InList(n) + ")",
                                      params));
    GPUNEX_ASSIGN_OR_RETURN(std::vector<UserRow> chunk, UserRows().Decode(rows));
    for (UserRow& u : chunk) out.push_back(std::move(u));
  }
  return out;
}

Status AccountsStore::InsertUser(const UserRow& u) {
  return tx_
      .Exec(
          "INSERT INTO users (id, email, name, password_hash, created_at, disabled) VALUES (?, ?, "
          "?, ?, ?, ?)",
          {u.id, u.email, u.name, u.password_hash, ToUnixMicros(u.created_at), int64_t{u.disabled}})
      .status();
}

Status AccountsStore::SetPasswordHash(const std::string& user_id, const std::string& hash) {
  CredentialCache::ForgetAfterCommit(tx_);
  return tx_.Exec("UPDATE users SET password_hash = ? WHERE id = ?", {hash, user_id}).status();
}

StatusOr<std::vector<std::string>> AccountsStore::RolesOf(const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT role FROM user_roles WHERE user_id = ? ORDER BY role", {user_id}));
  std::vector<std::string> roles;
  for (const auto& r : rows) roles.push_back(r["role"].Str());
  return roles;
}

StatusOr<std::vector<std::string>> AccountsStore::UsersWithRole(const std::string& role) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT user_id FROM user_roles WHERE role = ? ORDER BY user_id", {role}));
  std::vector<std::string> ids;
  for (const auto& r : rows) ids.push_back(r["user_id"].Str());
  return ids;
}

StatusOr<bool> AccountsStore::InsertRole(const std::string& user_id, const std::string& role,
                                         Timestamp at, const std::string& granted_by) {
  CredentialCache::ForgetAfterCommit(tx_);
  GPUNEX_ASSIGN_OR_RETURN(int64_t n,
                          tx_.Exec("INSERT INTO user_roles (user_id, role, granted_at, "
                                   "granted_by) VALUES (?, ?, ?, ?) ON CONFLICT (user_id, "
                                   "role) DO NOTHING",
                                   {user_id, role, ToUnixMicros(at), granted_by}));
  return n > 0;
}

Status AccountsStore::InsertSession(const SessionRow& s) {
  return tx_
      .Exec(std::string("INSERT INTO sessions (") + SessionRows().Names() +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {s.id, s.user_id, s.token_hash, s.csrf_token, ToUnixMicros(s.created_at),
             ToUnixMicros(s.expires_at), OptTimeValue(s.revoked_at), s.ip, s.user_agent,
             ToUnixMicros(s.last_seen_at)})
      .status();
}

namespace {
// Live: not revoked, not expired, used (or made) after the idle cut-off.
constexpr const char* kLiveSession =
    " revoked_at IS NULL AND expires_at > ? AND (last_seen_at > ? OR created_at > ?)";
}  // namespace

StatusOr<std::optional<SessionRow>> AccountsStore::FindLiveSession(const std::string& token_hash,
                                                                   Timestamp now,
                                                                   Timestamp idle_since) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + SessionRows().Select() +
                                        " FROM sessions WHERE token_hash = ? AND" + kLiveSession,
                                    {token_hash, ToUnixMicros(now), ToUnixMicros(idle_since),
                                     ToUnixMicros(idle_since)}));
  return SessionRows().First(rows);
}

StatusOr<std::vector<SessionRow>> AccountsStore::LiveSessionsOf(const std::string& user_id,
                                                                Timestamp now,
                                                                Timestamp idle_since) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(std::string("SELECT ") + SessionRows().Select() +
                    " FROM sessions WHERE user_id = ? AND" + kLiveSession +
                    " ORDER BY created_at DESC, id DESC",
                {user_id, ToUnixMicros(now), ToUnixMicros(idle_since), ToUnixMicros(idle_since)}));
  return SessionRows().Decode(rows);
}

StatusOr<bool> AccountsStore::RevokeSessionOf(const std::string& user_id,
                                              const std::string& session_id, Timestamp at) {
  CredentialCache::ForgetAfterCommit(tx_);
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t n,
      tx_.Exec("UPDATE sessions SET revoked_at = ? WHERE id = ? AND user_id = ? AND revoked_at IS "
               "NULL AND expires_at > ?",
               {ToUnixMicros(at), session_id, user_id, ToUnixMicros(at)}));
  return n > 0;
}

StatusOr<int64_t> AccountsStore::RevokeOtherSessions(const std::string& user_id,
                                                     const std::string& keep, Timestamp at) {
  CredentialCache::ForgetAfterCommit(tx_);
  return tx_.Exec(
      "UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND id <> ? AND revoked_at IS NULL "
      "AND expires_at > ?",
      {ToUnixMicros(at), user_id, keep, ToUnixMicros(at)});
}

Status AccountsStore::TouchSession(const std::string& session_id, Timestamp at) {
  return tx_
      .Exec("UPDATE sessions SET last_seen_at = ? WHERE id = ?", {ToUnixMicros(at), session_id})
      .status();
}

Status AccountsStore::RevokeSession(const std::string& session_id, Timestamp at) {
  CredentialCache::ForgetAfterCommit(tx_);
  return tx_
      .Exec("UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            {ToUnixMicros(at), session_id})
      .status();
}

Status AccountsStore::InsertApiKey(const ApiKeyRow& k) {
  return tx_
      .Exec(std::string("INSERT INTO api_keys (") + ApiKeyRows().Names() +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {k.id, k.user_id, k.name, k.token_hash, k.token_prefix, ToUnixMicros(k.created_at),
             OptTimeValue(k.last_used_at), OptTimeValue(k.revoked_at), k.scopes})
      .status();
}

StatusOr<int64_t> AccountsStore::CountActiveApiKeys(const std::string& user_id) {
  return CountOf(tx_, "SELECT COUNT(*) AS n FROM api_keys WHERE user_id = ? AND revoked_at IS NULL",
                 {user_id});
}

StatusOr<std::optional<ApiKeyRow>> AccountsStore::FindActiveApiKey(const std::string& token_hash) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows, tx_.Query(std::string("SELECT ") + ApiKeyRows().Select() +
                                      " FROM api_keys WHERE token_hash = ? AND revoked_at IS NULL",
                                  {token_hash}));
  return ApiKeyRows().First(rows);
}

StatusOr<std::vector<ApiKeyRow>> AccountsStore::ListApiKeys(const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + ApiKeyRows().Select() +
                                        " FROM api_keys WHERE user_id = ? ORDER BY id",
                                    {user_id}));
  return ApiKeyRows().Decode(rows);
}

StatusOr<bool> AccountsStore::RevokeApiKey(const std::string& key_id, const std::string& user_id,
                                           Timestamp at) {
  CredentialCache::ForgetAfterCommit(tx_);
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t n,
      tx_.Exec(
          "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND user_id = ? AND revoked_at IS NULL",
          {ToUnixMicros(at), key_id, user_id}));
  return n > 0;
}

Status AccountsStore::TouchApiKey(const std::string& key_id, Timestamp at) {
  return tx_.Exec("UPDATE api_keys SET last_used_at = ? WHERE id = ?", {ToUnixMicros(at), key_id})
      .status();
}

StatusOr<int64_t> AccountsStore::CountLoginFailuresByEmail(const std::string& email,
                                                           Timestamp since) {
  return CountOf(tx_, "SELECT COUNT(*) AS n FROM login_failures WHERE email = ? AND at > ?",
                 {email, ToUnixMicros(since)});
}

StatusOr<int64_t> AccountsStore::CountLoginFailuresByIp(const std::string& ip, Timestamp since) {
  return CountOf(tx_, "SELECT COUNT(*) AS n FROM login_failures WHERE ip = ? AND at > ?",
                 {ip, ToUnixMicros(since)});
}

StatusOr<int64_t> AccountsStore::CountLoginFailuresByEmailAndIp(const std::string& email,
                                                                const std::string& ip,
                                                                Timestamp since) {
  return CountOf(tx_,
                 "SELECT COUNT(*) AS n FROM login_failures WHERE email = ? AND ip = ? AND at > ?",
                 {email, ip, ToUnixMicros(since)});
}

StatusOr<std::optional<Timestamp>> AccountsStore::LastLoginFailure(const std::string& email,
                                                                   Timestamp since) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT MAX(at) AS at FROM login_failures WHERE email = ? AND "
                                    "at > ?",
                                    {email, ToUnixMicros(since)}));
  if (rows.empty()) return std::optional<Timestamp>();
  return rows[0]["at"].OptTime();
}

Status AccountsStore::InsertLoginFailure(const std::string& email, const std::string& ip,
                                         Timestamp at) {
  return tx_
      .Exec("INSERT INTO login_failures (id, email, ip, at) VALUES (?, ?, ?, ?)",
            {NewId("lgf"), email, ip, ToUnixMicros(at)})
      .status();
}

Status AccountsStore::ClearLoginFailures(const std::string& email) {
  return tx_.Exec("DELETE FROM login_failures WHERE email = ?", {email}).status();
}

Status AccountsStore::InsertAudit(const AuditRow& a) {
  return tx_
      .Exec(
          "INSERT INTO audit_events (id, at, actor_user_id, action, subject, ip, detail) "
          "VALUES (?, ?, ?, ?, ?, ?, ?)",
          {a.id, ToUnixMicros(a.at),
           a.actor_user_id ? store::Value(*a.actor_user_id) : store::Value(nullptr), a.action,
           a.subject, a.ip, a.detail_json})
      .status();
}

std::vector<store::Migration> AccountsMigrations() {
  return {
      {1,
       "accounts",
       "users, roles, sessions, API keys, log-in failures, audit log",
       {
           R"(CREATE TABLE users (
                id TEXT PRIMARY KEY,
                email TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                password_hash TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                disabled BIGINT NOT NULL DEFAULT 0))",
           R"(CREATE TABLE user_roles (
                user_id TEXT NOT NULL REFERENCES users(id),
                role TEXT NOT NULL,
                granted_at BIGINT NOT NULL,
                granted_by TEXT,
                PRIMARY KEY (user_id, role)))",
           R"(CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                token_hash TEXT NOT NULL UNIQUE,
                csrf_token TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                revoked_at BIGINT,
                ip TEXT NOT NULL DEFAULT '',
                user_agent TEXT NOT NULL DEFAULT ''))",
           "CREATE INDEX sessions_user ON sessions (user_id)",
           R"(CREATE TABLE api_keys (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                name TEXT NOT NULL,
                token_hash TEXT NOT NULL UNIQUE,
                token_prefix TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                last_used_at BIGINT,
                revoked_at BIGINT))",
           "CREATE INDEX api_keys_user ON api_keys (user_id)",
           R"(CREATE TABLE login_failures (
                id TEXT PRIMARY KEY,
                email TEXT NOT NULL,
                ip TEXT NOT NULL,
                at BIGINT NOT NULL))",
           "CREATE INDEX login_failures_email ON login_failures (email, at)",
           "CREATE INDEX login_failures_ip ON login_failures (ip, at)",
           R"(CREATE TABLE audit_events (
                id TEXT PRIMARY KEY,
                at BIGINT NOT NULL,
                actor_user_id TEXT,
                action TEXT NOT NULL,
                subject TEXT NOT NULL DEFAULT '',
                ip TEXT NOT NULL DEFAULT '',
                detail TEXT NOT NULL DEFAULT '{}'))",
           "CREATE INDEX audit_events_at ON audit_events (at)",
       },
       {}},
      // API keys get scopes (keys made before keep every scope their owner's roles allow,
      // as they had); sessions record when they were last used, for the idle timeout.
      {11,
       "accounts",
       "API key scopes; when a session was last used",
       {
           "ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT "
           "'read,write,provider,admin'",
           "ALTER TABLE sessions ADD COLUMN last_seen_at BIGINT NOT NULL DEFAULT 0",
       },
       {}},
  };
}

}  // namespace gpunex::platform::accounts
