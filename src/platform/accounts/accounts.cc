#include "platform/accounts/accounts.h"

#include <sodium.h>

#include <algorithm>
#include <cctype>

#include "common/ids.h"

namespace gpunex::platform::accounts {
namespace {

constexpr std::string_view kSessionPrefix = "gpx_s";
constexpr std::string_view kApiKeyPrefix = "gpx_k";
constexpr std::string_view kAgentTokenPrefix = "gpx_a";
constexpr size_t kMaxPassword = 256;
constexpr size_t kMinPassword = 10;
constexpr int kMaxApiKeysPerUser = 50;
// last_used_at is refreshed at most this often, so authenticated reads stay reads.
constexpr UnixMicros kLastUsedGranularity = 60 * kMicrosPerSecond;

bool IsAtext(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+/=?^_`{|}~.-").find(c) != std::string_view::npos;
}

}  // namespace

bool User::HasRole(std::string_view role) const {
  return std::find(roles.begin(), roles.end(), role) != roles.end();
}

json::object ToJson(const User& u) {
  json::array roles;
  for (const auto& r : u.roles) roles.emplace_back(r);
  return {{"id", u.id},
          {"email", u.email},
          {"name", u.name},
          {"roles", std::move(roles)},
          {"created_at", FormatRfc3339(u.created_at)}};
}

json::object ToJson(const ApiKey& k) {
  json::object o{{"id", k.id},
                 {"name", k.name},
                 {"prefix", k.prefix},
                 {"created_at", FormatRfc3339(k.created_at)}};
  o["last_used_at"] = k.last_used_at ? json::value(FormatRfc3339(*k.last_used_at)) : nullptr;
  o["revoked_at"] = k.revoked_at ? json::value(FormatRfc3339(*k.revoked_at)) : nullptr;
  return o;
}

std::string CheckEmail(std::string_view email, std::string* normalized) {
  if (email.size() > 254) return "must be at most 254 characters";
  size_t at = email.rfind('@');
  if (at == std::string_view::npos || at == 0 || at + 1 >= email.size()) {
    return "must be a valid email address";
  }
  std::string_view local = email.substr(0, at);
  std::string_view domain = email.substr(at + 1);
  if (local.size() > 64) return "must be a valid email address";
  if (local.front() == '.' || local.back() == '.' || local.find("..") != std::string_view::npos) {
    return "must be a valid email address";
  }
  for (char c : local) {
    if (!IsAtext(c)) return "must be a valid email address";
  }
  if (domain.find('.') == std::string_view::npos) return "must be a valid email address";
  size_t start = 0;
  while (start <= domain.size()) {
    size_t end = domain.find('.', start);
    if (end == std::string_view::npos) end = domain.size();
    std::string_view label = domain.substr(start, end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return "must be a valid email address";
    }
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') {
        return "must be a valid email address";
      }
    }
    if (end == domain.size()) {
      bool alpha = std::all_of(label.begin(), label.end(),
                               [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
      if (!alpha || label.size() < 2) return "must be a valid email address";
      break;
    }
    start = end + 1;
  }
  normalized->assign(email);
  std::transform(normalized->begin(), normalized->end(), normalized->begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return "";
}

Status Audit(store::Tx& tx, const std::optional<std::string>& actor_user_id,
             std::string_view action, std::string_view subject, std::string_view ip,
             json::object detail) {
  store::Value actor = actor_user_id ? store::Value(*actor_user_id) : store::Value(nullptr);
  return tx
      .Exec("INSERT INTO audit_events (id, at, actor_user_id, action, subject, ip, detail) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            {NewId("aud"), NowMicros(), actor, std::string(action), std::string(subject),
             std::string(ip), json::serialize(detail)})
      .status();
}

Status GrantRole(store::Tx& tx, const std::string& user_id, std::string_view role,
                 const std::string& granted_by) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t n, tx.Exec("INSERT INTO user_roles (user_id, role, granted_at, granted_by) "
                         "VALUES (?, ?, ?, ?) ON CONFLICT (user_id, role) DO NOTHING",
                         {user_id, std::string(role), NowMicros(), granted_by}));
  if (n > 0) {
    GPUNEX_RETURN_IF_ERROR(
        Audit(tx, granted_by, "role.granted", user_id, "", {{"role", std::string(role)}}));
  }
  return Status::Ok();
}

StatusOr<User> LoadUser(store::Tx& tx, const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx.Query("SELECT id, email, name, created_at FROM users WHERE id = ? AND disabled = 0",
               {user_id}));
  if (rows.empty()) return NotFound("no such user");
  User u{rows[0].Str(0), rows[0].Str(1), rows[0].Str(2), {}, rows[0].Int(3)};
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows roles,
      tx.Query("SELECT role FROM user_roles WHERE user_id = ? ORDER BY role", {user_id}));
  for (const auto& r : roles) u.roles.push_back(r.Str(0));
  return u;
}

Accounts::Accounts(store::Database& db, AccountsOptions options)
    : db_(db), options_(options) {
  if (sodium_init() < 0) throw std::runtime_error("libsodium failed to initialise");
  auto h = HashPassword("gpunex-timing-equaliser");
  dummy_hash_ = h.ok() ? *h : "";
}

StatusOr<std::string> Accounts::HashPassword(std::string_view password) const {
  char out[crypto_pwhash_STRBYTES];
  if (crypto_pwhash_str_alg(out, password.data(), password.size(), options_.argon2_opslimit,
                            options_.argon2_memlimit_bytes, crypto_pwhash_ALG_ARGON2ID13) != 0) {
    return Internal("password hashing ran out of memory");
  }
  return std::string(out);
}

bool Accounts::VerifyPassword(const std::string& hash, std::string_view password) const {
  if (hash.empty()) return false;
  return crypto_pwhash_str_verify(hash.c_str(), password.data(), password.size()) == 0;
}

StatusOr<User> Accounts::SignUp(const json::value& body, std::string_view ip) {
  if (!body.is_object()) return FieldError("body", "must be a JSON object");
  FieldErrors errors;
  JsonReader r(body.get_object(), "", &errors);
  r.RejectUnknown({"email", "password", "name"});
  auto email = r.String("email", true, 254);
  auto password = r.String("password", true, kMaxPassword);
  auto name = r.String("name", true, 200);
  std::string normalized;
  if (email) {
    std::string why = CheckEmail(*email, &normalized);
    if (!why.empty()) errors.emplace("email", why);
  }
  if (password && password->size() < kMinPassword) {
    errors.emplace("password", "must be at least " + std::to_string(kMinPassword) + " characters");
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));

  GPUNEX_ASSIGN_OR_RETURN(std::string hash, HashPassword(*password));
  User user{NewId("usr"), normalized, *name, {std::string(kRoleCustomer)}, options_.clock->Now()};
  Status st = db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(store::Rows existing,
                            tx.Query("SELECT 1 FROM users WHERE email = ?", {user.email}));
    if (!existing.empty()) {
      return Status(StatusCode::kAlreadyExists, "an account with this email already exists",
                    FieldErrors{{"email", "is already registered"}});
    }
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("INSERT INTO users (id, email, name, password_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                {user.id, user.email, user.name, hash, user.created_at})
            .status());
    GPUNEX_RETURN_IF_ERROR(GrantRole(tx, user.id, kRoleCustomer, user.id));
    return Audit(tx, user.id, "user.signup", user.id, ip);
  });
  if (st.code() == StatusCode::kAlreadyExists && st.fields().empty()) {
    return Status(StatusCode::kAlreadyExists, "an account with this email already exists",
                  FieldErrors{{"email", "is already registered"}});
  }
  GPUNEX_RETURN_IF_ERROR(st);
  return user;
}

StatusOr<LoginResult> Accounts::Login(const json::value& body, std::string_view ip,
                                      std::string_view user_agent) {
  if (!body.is_object()) return FieldError("body", "must be a JSON object");
  FieldErrors errors;
  JsonReader r(body.get_object(), "", &errors);
  r.RejectUnknown({"email", "password"});
  auto email = r.String("email", true, 254);
  auto password = r.String("password", true, kMaxPassword);
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  std::string normalized = *email;
  std::transform(normalized.begin(), normalized.end(), normalized.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const UnixMicros now = options_.clock->Now();
  const UnixMicros window_start =
      now - static_cast<UnixMicros>(options_.login_window_minutes) * 60 * kMicrosPerSecond;
  const std::string ip_s(ip);

  // Throttle check and user lookup.
  std::string user_id, hash;
  bool throttled = false;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows by_email,
        tx.Query("SELECT COUNT(*) FROM login_failures WHERE email = ? AND at > ?",
                 {normalized, window_start}));
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows by_ip, tx.Query("SELECT COUNT(*) FROM login_failures WHERE ip = ? AND at > ?",
                                    {ip_s, window_start}));
    throttled = by_email[0].Int(0) >= options_.login_max_failures ||
                by_ip[0].Int(0) >= options_.login_max_failures_ip;
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows u, tx.Query("SELECT id, password_hash FROM users WHERE email = ? AND disabled = 0",
                                {normalized}));
    if (!u.empty()) {
      user_id = u[0].Str(0);
      hash = u[0].Str(1);
    }
    return Status::Ok();
  }));
  if (throttled) {
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) {
      return Audit(tx, user_id.empty() ? std::nullopt : std::optional(user_id), "login.throttled",
                   normalized, ip);
    }));
    return ResourceExhausted("too many failed log-ins; try again in " +
                             std::to_string(options_.login_window_minutes) + " minutes");
  }
  bool ok = VerifyPassword(user_id.empty() ? dummy_hash_ : hash, *password) && !user_id.empty();
  if (!ok) {
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
      GPUNEX_RETURN_IF_ERROR(
          tx.Exec("INSERT INTO login_failures (id, email, ip, at) VALUES (?, ?, ?, ?)",
                  {NewId("lgf"), normalized, ip_s, now})
              .status());
      return Audit(tx, user_id.empty() ? std::nullopt : std::optional(user_id), "login.failed",
                   normalized, ip);
    }));
    return Unauthenticated("wrong email or password");
  }

  LoginResult result;
  result.token = NewSecret(kSessionPrefix);
  result.csrf_token = NewSecret("csrf");
  result.expires_at = now + static_cast<UnixMicros>(options_.session_ttl_hours) * 3600 * kMicrosPerSecond;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    std::string sid = NewId("ses");
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("INSERT INTO sessions (id, user_id, token_hash, csrf_token, created_at, expires_at, "
                "ip, user_agent) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                {sid, user_id, Sha256Hex(result.token), result.csrf_token, now, result.expires_at,
                 ip_s, std::string(user_agent.substr(0, 512))})
            .status());
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("DELETE FROM login_failures WHERE email = ?", {normalized}).status());
    GPUNEX_RETURN_IF_ERROR(Audit(tx, user_id, "login.succeeded", sid, ip));
    GPUNEX_ASSIGN_OR_RETURN(result.user, LoadUser(tx, user_id));
    return Status::Ok();
  }));
  return result;
}

Status Accounts::Logout(const Principal& p) {
  if (p.via == Principal::Via::kApiKey) return Status::Ok();
  return db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                {options_.clock->Now(), p.credential_id})
            .status());
    return Audit(tx, p.user.id, "logout", p.credential_id, p.ip);
  });
}

StatusOr<Principal> Accounts::Authenticate(std::string_view token, bool from_cookie,
                                           std::string_view ip) {
  if (token.size() > 128) return Unauthenticated("invalid credentials");
  if (token.starts_with(kAgentTokenPrefix)) {
    return Unauthenticated("agent tokens are accepted only on the agent channel");
  }
  const bool is_session = token.starts_with(kSessionPrefix);
  const bool is_key = token.starts_with(kApiKeyPrefix);
  if (!is_session && !(is_key && !from_cookie)) return Unauthenticated("invalid credentials");
  const std::string hash = Sha256Hex(token);
  const UnixMicros now = options_.clock->Now();
  Principal p;
  p.ip = std::string(ip);
  bool touch = false;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    std::string user_id;
    if (is_session) {
      GPUNEX_ASSIGN_OR_RETURN(
          store::Rows rows,
          tx.Query("SELECT id, user_id, csrf_token FROM sessions WHERE token_hash = ? AND "
                   "revoked_at IS NULL AND expires_at > ?",
                   {hash, now}));
      if (rows.empty()) return Unauthenticated("the session has expired or was ended");
      p.credential_id = rows[0].Str(0);
      user_id = rows[0].Str(1);
      p.csrf_token = rows[0].Str(2);
      p.via = from_cookie ? Principal::Via::kCookieSession : Principal::Via::kBearerSession;
    } else {
      GPUNEX_ASSIGN_OR_RETURN(
          store::Rows rows,
          tx.Query("SELECT id, user_id, last_used_at FROM api_keys WHERE token_hash = ? AND "
                   "revoked_at IS NULL",
                   {hash}));
      if (rows.empty()) return Unauthenticated("the API key is unknown or revoked");
      p.credential_id = rows[0].Str(0);
      user_id = rows[0].Str(1);
      p.via = Principal::Via::kApiKey;
      touch = rows[0].OptInt(2).value_or(0) < now - kLastUsedGranularity;
    }
    auto u = LoadUser(tx, user_id);
    if (!u.ok()) return Unauthenticated("the account is disabled");
    p.user = std::move(*u);
    return Status::Ok();
  }));
  if (touch) {
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) {
      return tx.Exec("UPDATE api_keys SET last_used_at = ? WHERE id = ?", {now, p.credential_id})
          .status();
    }));
  }
  return p;
}

StatusOr<std::pair<ApiKey, std::string>> Accounts::CreateApiKey(const Principal& p,
                                                                const json::value& body) {
  if (!body.is_object()) return FieldError("body", "must be a JSON object");
  FieldErrors errors;
  JsonReader r(body.get_object(), "", &errors);
  r.RejectUnknown({"name"});
  auto name = r.String("name", true, 100);
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  std::string secret = NewSecret(kApiKeyPrefix);
  ApiKey key{NewId("key"), *name, secret.substr(0, 12), options_.clock->Now(), {}, {}};
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows n,
        tx.Query("SELECT COUNT(*) FROM api_keys WHERE user_id = ? AND revoked_at IS NULL",
                 {p.user.id}));
    if (n[0].Int(0) >= kMaxApiKeysPerUser) {
      return FailedPrecondition("at most " + std::to_string(kMaxApiKeysPerUser) +
                                " active API keys; revoke one first");
    }
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("INSERT INTO api_keys (id, user_id, name, token_hash, token_prefix, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                {key.id, p.user.id, key.name, Sha256Hex(secret), key.prefix, key.created_at})
            .status());
    return Audit(tx, p.user.id, "api_key.created", key.id, p.ip);
  }));
  return std::make_pair(key, secret);
}

StatusOr<std::vector<ApiKey>> Accounts::ListApiKeys(const Principal& p) {
  std::vector<ApiKey> keys;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows rows,
        tx.Query("SELECT id, name, token_prefix, created_at, last_used_at, revoked_at FROM "
                 "api_keys WHERE user_id = ? ORDER BY id",
                 {p.user.id}));
    for (const auto& r : rows) {
      keys.push_back({r.Str(0), r.Str(1), r.Str(2), r.Int(3), r.OptInt(4), r.OptInt(5)});
    }
    return Status::Ok();
  }));
  return keys;
}

Status Accounts::RevokeApiKey(const Principal& p, const std::string& key_id) {
  return db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        int64_t n, tx.Exec("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND user_id = ? AND "
                           "revoked_at IS NULL",
                           {options_.clock->Now(), key_id, p.user.id}));
    if (n == 0) return NotFound("no such active API key");
    return Audit(tx, p.user.id, "api_key.revoked", key_id, p.ip);
  });
}

StatusOr<User> Accounts::CreateAdmin(std::string_view email, std::string_view password,
                                     std::string_view name) {
  std::string normalized;
  std::string why = CheckEmail(email, &normalized);
  if (!why.empty()) return FieldError("email", why);
  if (password.size() < kMinPassword) {
    return FieldError("password", "must be at least " + std::to_string(kMinPassword) + " characters");
  }
  GPUNEX_ASSIGN_OR_RETURN(std::string hash, HashPassword(password));
  User out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                            tx.Query("SELECT id FROM users WHERE email = ?", {normalized}));
    std::string id;
    if (rows.empty()) {
      id = NewId("usr");
      GPUNEX_RETURN_IF_ERROR(
          tx.Exec("INSERT INTO users (id, email, name, password_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                  {id, normalized, std::string(name.empty() ? "Administrator" : name), hash,
                   options_.clock->Now()})
              .status());
      GPUNEX_RETURN_IF_ERROR(GrantRole(tx, id, kRoleCustomer, id));
    } else {
      id = rows[0].Str(0);
      GPUNEX_RETURN_IF_ERROR(
          tx.Exec("UPDATE users SET password_hash = ? WHERE id = ?", {hash, id}).status());
    }
    GPUNEX_RETURN_IF_ERROR(GrantRole(tx, id, kRoleAdmin, id));
    GPUNEX_RETURN_IF_ERROR(Audit(tx, std::nullopt, "admin.created", id, "cli"));
    GPUNEX_ASSIGN_OR_RETURN(out, LoadUser(tx, id));
    return Status::Ok();
  }));
  return out;
}

}  // namespace gpunex::platform::accounts
