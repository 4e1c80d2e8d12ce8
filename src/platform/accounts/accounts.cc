#include "platform/accounts/accounts.h"

#include <sodium.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "common/ascii.h"
#include "common/ids.h"
#include "common/json.h"
#include "common/utf8.h"
#include "platform/accounts/accounts_store.h"
#include "platform/accounts/credential_cache.h"
#include "platform/accounts/password_policy.h"
#include "platform/notify/verify.h"

namespace gpunex::platform::accounts {
namespace {

constexpr std::string_view kSessionPrefix = "gpx_s";
constexpr std::string_view kApiKeyPrefix = "gpx_k";
constexpr std::string_view kAgentTokenPrefix = "gpx_a";
constexpr int kMaxApiKeysPerUser = 50;
// last_used_at is refreshed at most this often, so authenticated reads stay reads.
constexpr Duration kLastUsedGranularity = kOneMinute;

bool IsAtext(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+/=?^_`{|}~.-").find(c) != std::string_view::npos;
}

constexpr std::array<std::string_view, 4> kScopes = {kScopeRead, kScopeWrite, kScopeProvider,
                                                     kScopeAdmin};

std::vector<std::string> SplitScopes(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view scope : kScopes) {
    size_t start = 0;
    while (start <= text.size()) {
      size_t comma = text.find(',', start);
      if (comma == std::string_view::npos) comma = text.size();
      if (text.substr(start, comma - start) == scope) {
        out.emplace_back(scope);
        break;
      }
      start = comma + 1;
    }
  }
  return out;
}

bool HasScope(const std::vector<std::string>& scopes, std::string_view scope) {
  return std::find(scopes.begin(), scopes.end(), scope) != scopes.end();
}

ApiKey KeyFrom(const ApiKeyRow& r) {
  return {r.id,           r.name,       r.token_prefix,       r.created_at,
          r.last_used_at, r.revoked_at, SplitScopes(r.scopes)};
}

Status RequireSession(const Principal& p, std::string_view what) {
  if (p.IsApiKey()) {
    return PermissionDenied("an API key cannot " + std::string(what) + "; log in to do it");
  }
  return Status::Ok();
}

}  // namespace

bool User::HasRole(std::string_view role) const {
  return std::find(roles.begin(), roles.end(), role) != roles.end();
}

bool Principal::HasScope(std::string_view scope) const {
  return !IsApiKey() || std::find(scopes.begin(), scopes.end(), scope) != scopes.end();
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
  *normalized = AsciiLower(email);
  return "";
}

Status Audit(store::Tx& tx, Timestamp at, const std::optional<std::string>& actor_user_id,
             std::string_view action, std::string_view subject, std::string_view ip,
             const AuditDetail& detail) {
  json::object d;
  for (const auto& [k, v] : detail) d[k] = v;
  return AccountsStore(tx).InsertAudit({NewId("aud"), at, actor_user_id, std::string(action),
                                        std::string(subject), std::string(ip), ToJsonText(d)});
}

StatusOr<std::vector<std::string>> UsersWithRole(store::Tx& tx, std::string_view role) {
  return AccountsStore(tx).UsersWithRole(std::string(role));
}

Status GrantRole(store::Tx& tx, Timestamp at, const std::string& user_id, std::string_view role,
                 const std::string& granted_by) {
  GPUNEX_ASSIGN_OR_RETURN(bool added,
                          AccountsStore(tx).InsertRole(user_id, std::string(role), at, granted_by));
  if (added)
    GPUNEX_RETURN_IF_ERROR(
        Audit(tx, at, granted_by, "role.granted", user_id, "", {{"role", std::string(role)}}));
  return Status::Ok();
}

StatusOr<User> LoadUser(store::Tx& tx, const std::string& user_id) {
  AccountsStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<UserRow> row, s.FindActiveUser(user_id));
  if (!row) return NotFound("no such user");
  User u{row->id, row->email, row->name, {}, row->created_at};
  GPUNEX_ASSIGN_OR_RETURN(u.roles, s.RolesOf(user_id));
  return u;
}

Accounts::Accounts(store::Database& db, AccountsOptions options)
    : db_(db),
      options_(options),
      gate_(std::make_unique<PasswordGate>(
          options.password_hash_concurrency, options.password_hash_waiting,
          std::chrono::milliseconds(options.password_hash_max_wait_ms))),
      credentials_(std::make_unique<CredentialCache>(options.credential_cache_ttl,
                                                     options.credential_cache_entries)) {
  if (sodium_init() < 0) throw std::runtime_error("libsodium failed to initialise");
  auto h = HashPassword("gpunex-timing-equaliser");
  dummy_hash_ = h.ok() ? *h : "";
}

Accounts::~Accounts() = default;

StatusOr<std::string> Accounts::HashPassword(std::string_view password) const {
  GPUNEX_ASSIGN_OR_RETURN(PasswordGate::Pass pass, gate_->Enter());
  char out[crypto_pwhash_STRBYTES];
  if (crypto_pwhash_str_alg(out, password.data(), password.size(), options_.argon2_opslimit,
                            options_.argon2_memlimit_bytes, crypto_pwhash_ALG_ARGON2ID13) != 0) {
    return Internal("password hashing ran out of memory");
  }
  return std::string(out);
}

StatusOr<bool> Accounts::VerifyPassword(const std::string& hash, std::string_view password) const {
  if (hash.empty()) return false;
  GPUNEX_ASSIGN_OR_RETURN(PasswordGate::Pass pass, gate_->Enter());
  return crypto_pwhash_str_verify(hash.c_str(), password.data(), password.size()) == 0;
}

namespace {

// A name without invisible characters and outer spaces.
std::string CleanName(std::string_view name) {
  std::string out = StripInvisible(name);
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!out.empty() && space(out.back())) out.pop_back();
  size_t lead = 0;
  while (lead < out.size() && space(out[lead])) ++lead;
  return out.substr(lead);
}

}  // namespace

StatusOr<User> Accounts::SignUp(const SignUpRequest& req, std::string_view ip) {
  FieldErrors errors;
  std::string normalized;
  if (std::string why = CheckEmail(req.email, &normalized); !why.empty())
    errors.emplace("email", why);
  const std::string name = CleanName(req.name);
  if (name.empty()) errors.emplace("name", "is required");
  if (std::string why = CheckPasswordStrength(req.password, normalized, name); !why.empty()) {
    errors.emplace("password", why);
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));

  // Hashed whether or not the email is taken, so that the time does not tell either.
  GPUNEX_ASSIGN_OR_RETURN(std::string hash, HashPassword(req.password));
  const Timestamp now = options_.clock->Now();
  // The same answer for a taken email: a user that does not exist (its id is never stored).
  User user{NewId("usr"), normalized, name, {std::string(kRoleCustomer)}, now};
  const auto sign_up = [&](store::Tx& tx) -> Status {
    AccountsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<UserRow> existing, s.FindUserByEmail(user.email));
    if (existing) {
      // The owner learns of it by email; the caller learns nothing.
      if (options_.verifier != nullptr) {
        GPUNEX_RETURN_IF_ERROR(
            options_.verifier->TellOwnerOfSignUp(tx, now, existing->id, existing->email));
      }
      return Audit(tx, now, existing->id, "user.signup_existing", existing->id, ip);
    }
    GPUNEX_RETURN_IF_ERROR(s.InsertUser({user.id, user.email, user.name, hash, now, false}));
    GPUNEX_RETURN_IF_ERROR(GrantRole(tx, now, user.id, kRoleCustomer, user.id));
    if (options_.verifier != nullptr) {
      GPUNEX_RETURN_IF_ERROR(options_.verifier->SendLink(tx, now, user.id, user.email));
    }
    return Audit(tx, now, user.id, "user.signup", user.id, ip);
  };
  Status st = db_.Transact(sign_up);
  // A concurrent sign-up with the same email loses on the unique index: then it is taken.
  if (st.code() == StatusCode::kAlreadyExists) st = db_.Transact(sign_up);
  GPUNEX_RETURN_IF_ERROR(st);
  return user;
}

StatusOr<LoginResult> Accounts::Login(const LoginRequest& req, std::string_view ip,
                                      std::string_view user_agent) {
  const std::string email = AsciiLower(req.email);
  const Timestamp now = options_.clock->Now();
  const Timestamp window_start = now - std::chrono::minutes(options_.login_window_minutes);
  const std::string ip_s(ip);

  // Throttle check and user lookup. An attempt that passes the check is written down as a
  // failure in the same transaction, before its password is checked, and struck off if the
  // password is right: attempts made at the same moment (on this instance or on others)
  // each count the ones before them, so no more than the limit are ever checked at once.
  // One that dies in between stays counted.
  std::optional<UserRow> user;
  std::string throttled;  // why, when the attempt is refused
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    AccountsStore s(tx);
    throttled.clear();
    GPUNEX_ASSIGN_OR_RETURN(int64_t by_ip, s.CountLoginFailuresByIp(ip_s, window_start));
    GPUNEX_ASSIGN_OR_RETURN(int64_t here,
                            s.CountLoginFailuresByEmailAndIp(email, ip_s, window_start));
    GPUNEX_ASSIGN_OR_RETURN(int64_t by_email, s.CountLoginFailuresByEmail(email, window_start));
    const std::string window = std::to_string(options_.login_window_minutes) + " minutes";
    if (by_ip >= options_.login_max_failures_ip || here >= options_.login_max_failures) {
      throttled = "too many failed log-ins from this address; try again in " + window;
    } else if (by_email >= options_.login_max_failures) {
      // Failures from other addresses: a growing wait, never a lock.
      const int64_t doublings = std::min<int64_t>(by_email - options_.login_max_failures, 30);
      const Duration wait =
          std::min<Duration>(Seconds(int64_t{1} << doublings), Seconds(options_.login_max_delay_s));
      GPUNEX_ASSIGN_OR_RETURN(std::optional<Timestamp> last,
                              s.LastLoginFailure(email, window_start));
      if (last && now < *last + wait) {
        const int64_t left = std::chrono::ceil<std::chrono::seconds>(*last + wait - now).count();
        throttled =
            "too many failed log-ins for this account; try again in " + std::to_string(left) + " s";
      }
    }
    GPUNEX_ASSIGN_OR_RETURN(user, s.FindUserByEmail(email));
    if (user && user->disabled) user.reset();
    if (!throttled.empty()) return Status::Ok();
    return s.InsertLoginFailure(email, ip_s, now);
  }));
  const std::optional<std::string> user_id = user ? std::optional(user->id) : std::nullopt;
  if (!throttled.empty()) {
    GPUNEX_RETURN_IF_ERROR(db_.Transact(
        [&](store::Tx& tx) { return Audit(tx, now, user_id, "login.throttled", email, ip); }));
    return ResourceExhausted(throttled);
  }
  GPUNEX_ASSIGN_OR_RETURN(bool verified,
                          VerifyPassword(user ? user->password_hash : dummy_hash_, req.password));
  const bool ok = verified && user;
  if (!ok) {
    // Counted already, above.
    GPUNEX_RETURN_IF_ERROR(db_.Transact(
        [&](store::Tx& tx) { return Audit(tx, now, user_id, "login.failed", email, ip); }));
    return Unauthenticated("wrong email or password");
  }

  LoginResult result;
  result.token = NewSecret(kSessionPrefix);
  result.csrf_token = NewSecret("csrf");
  result.expires_at = now + std::chrono::hours(options_.session_ttl_hours);
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    AccountsStore s(tx);
    const std::string sid = NewId("ses");
    GPUNEX_RETURN_IF_ERROR(s.InsertSession({sid, user->id, Sha256Hex(result.token),
                                            result.csrf_token, now, result.expires_at, std::nullopt,
                                            ip_s, std::string(user_agent.substr(0, 512)), now}));
    GPUNEX_RETURN_IF_ERROR(s.ClearLoginFailures(email));
    GPUNEX_RETURN_IF_ERROR(Audit(tx, now, user->id, "login.succeeded", sid, ip));
    GPUNEX_ASSIGN_OR_RETURN(result.user, LoadUser(tx, user->id));
    return Status::Ok();
  }));
  return result;
}

Status Accounts::Logout(const Principal& p) {
  if (p.via == Principal::Via::kApiKey) return Status::Ok();
  const Timestamp now = options_.clock->Now();
  return db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(AccountsStore(tx).RevokeSession(p.credential_id, now));
    return Audit(tx, now, p.user.id, "logout", p.credential_id, p.ip);
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
  const Timestamp now = options_.clock->Now();
  if (std::optional<Principal> cached = credentials_->Find(hash, now)) {
    // A session's kind of use (bearer or cookie) is the request's, as is the address.
    if (is_session) {
      cached->via = from_cookie ? Principal::Via::kCookieSession : Principal::Via::kBearerSession;
    }
    cached->ip = std::string(ip);
    return *std::move(cached);
  }
  const uint64_t generation = CredentialCache::Generation();
  const Timestamp idle_since = now - std::chrono::minutes(options_.session_idle_minutes);
  Principal p;
  p.ip = std::string(ip);
  bool touch = false;
  std::vector<std::string> scopes;
  // When the credential stops working by itself (a session's expiry or idle limit).
  Timestamp usable_until = Timestamp::max();
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    AccountsStore s(tx);
    std::string user_id;
    if (is_session) {
      GPUNEX_ASSIGN_OR_RETURN(std::optional<SessionRow> session,
                              s.FindLiveSession(hash, now, idle_since));
      if (!session) return Unauthenticated("the session has expired or was ended");
      p.credential_id = session->id;
      user_id = session->user_id;
      p.csrf_token = session->csrf_token;
      p.via = from_cookie ? Principal::Via::kCookieSession : Principal::Via::kBearerSession;
      touch = session->last_seen_at < now - kLastUsedGranularity;
      usable_until =
          std::min(session->expires_at, std::max(session->last_seen_at, session->created_at) +
                                            std::chrono::minutes(options_.session_idle_minutes));
    } else {
      GPUNEX_ASSIGN_OR_RETURN(std::optional<ApiKeyRow> key, s.FindActiveApiKey(hash));
      if (!key) return Unauthenticated("the API key is unknown or revoked");
      p.credential_id = key->id;
      user_id = key->user_id;
      p.via = Principal::Via::kApiKey;
      scopes = SplitScopes(key->scopes);
      touch = !key->last_used_at || *key->last_used_at < now - kLastUsedGranularity;
    }
    auto u = LoadUser(tx, user_id);
    if (!u.ok()) return Unauthenticated("the account is disabled");
    p.user = std::move(*u);
    return Status::Ok();
  }));
  if (p.IsApiKey()) {
    // The key acts with the roles its scopes allow.
    std::erase_if(p.user.roles, [&](const std::string& role) {
      return (role == kRoleAdmin && !HasScope(scopes, kScopeAdmin)) ||
             (role == kRoleProvider && !HasScope(scopes, kScopeProvider));
    });
    p.can_write = HasScope(scopes, kScopeWrite);
    p.scopes = scopes;
    if (!HasScope(scopes, kScopeRead) && !p.can_write) {
      return Unauthenticated("the API key has no scope");
    }
  }
  if (touch) {
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) {
      return p.IsApiKey() ? AccountsStore(tx).TouchApiKey(p.credential_id, now)
                          : AccountsStore(tx).TouchSession(p.credential_id, now);
    }));
  }
  credentials_->Put(hash, p, now, usable_until, generation);
  return p;
}

StatusOr<NewApiKey> Accounts::CreateApiKey(const Principal& p, const std::string& name,
                                           const std::vector<std::string>& scopes) {
  GPUNEX_RETURN_IF_ERROR(RequireSession(p, "create API keys"));
  FieldErrors errors;
  if (name.empty()) {
    errors["name"] = "is required";
  } else if (name.size() > kMaxApiKeyName) {
    errors["name"] = "must be at most " + std::to_string(kMaxApiKeyName) + " characters";
  }
  std::string scope_text;
  if (scopes.empty()) errors["scopes"] = "must name at least one of read, write, provider, admin";
  for (size_t i = 0; i < scopes.size(); ++i) {
    const std::string field = "scopes[" + std::to_string(i) + "]";
    const std::string& sc = scopes[i];
    if (std::find(kScopes.begin(), kScopes.end(), sc) == kScopes.end()) {
      errors[field] = "must be one of read, write, provider, admin";
    } else if (std::find(scopes.begin(), scopes.begin() + static_cast<std::ptrdiff_t>(i), sc) !=
               scopes.begin() + static_cast<std::ptrdiff_t>(i)) {
      errors[field] = "is named twice";
    } else if ((sc == kScopeAdmin && !p.IsAdmin()) ||
               (sc == kScopeProvider && !p.user.HasRole(kRoleProvider))) {
      errors[field] = "is for users with the " + sc + " role only";
    } else {
      scope_text += (scope_text.empty() ? "" : ",") + sc;
    }
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  const Timestamp now = options_.clock->Now();
  NewApiKey out;
  out.secret = NewSecret(kApiKeyPrefix);
  out.key = {NewId("key"), name,         out.secret.substr(0, 12), now,
             std::nullopt, std::nullopt, SplitScopes(scope_text)};
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    AccountsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(int64_t active, s.CountActiveApiKeys(p.user.id));
    if (active >= kMaxApiKeysPerUser) {
      return FailedPrecondition("at most " + std::to_string(kMaxApiKeysPerUser) +
                                " active API keys; revoke one first");
    }
    GPUNEX_RETURN_IF_ERROR(
        s.InsertApiKey({out.key.id, p.user.id, out.key.name, Sha256Hex(out.secret), out.key.prefix,
                        now, std::nullopt, std::nullopt, scope_text}));
    return Audit(tx, now, p.user.id, "api_key.created", out.key.id, p.ip, {{"scopes", scope_text}});
  }));
  return out;
}

StatusOr<std::vector<ApiKey>> Accounts::ListApiKeys(const Principal& p) {
  std::vector<ApiKey> keys;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::vector<ApiKeyRow> rows, AccountsStore(tx).ListApiKeys(p.user.id));
    keys.clear();
    for (const auto& r : rows) keys.push_back(KeyFrom(r));
    return Status::Ok();
  }));
  return keys;
}

Status Accounts::RevokeApiKey(const Principal& p, const std::string& key_id) {
  const Timestamp now = options_.clock->Now();
  return db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(bool revoked, AccountsStore(tx).RevokeApiKey(key_id, p.user.id, now));
    if (!revoked) return NotFound("no such active API key");
    return Audit(tx, now, p.user.id, "api_key.revoked", key_id, p.ip);
  });
}

StatusOr<std::vector<SessionInfo>> Accounts::ListSessions(const Principal& p) {
  const Timestamp now = options_.clock->Now();
  const Timestamp idle_since = now - std::chrono::minutes(options_.session_idle_minutes);
  std::vector<SessionInfo> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::vector<SessionRow> rows,
                            AccountsStore(tx).LiveSessionsOf(p.user.id, now, idle_since));
    out.clear();
    for (const SessionRow& r : rows) {
      out.push_back({r.id, r.created_at, r.last_seen_at, r.expires_at, r.ip, r.user_agent,
                     !p.IsApiKey() && r.id == p.credential_id});
    }
    return Status::Ok();
  }));
  return out;
}

Status Accounts::RevokeSession(const Principal& p, const std::string& session_id) {
  const Timestamp now = options_.clock->Now();
  return db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(bool revoked,
                            AccountsStore(tx).RevokeSessionOf(p.user.id, session_id, now));
    if (!revoked) return NotFound("no such session");
    return Audit(tx, now, p.user.id, "session.revoked", session_id, p.ip);
  });
}

StatusOr<int64_t> Accounts::RevokeOtherSessions(const Principal& p) {
  const Timestamp now = options_.clock->Now();
  int64_t n = 0;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(n, AccountsStore(tx).RevokeOtherSessions(
                                   p.user.id, p.IsApiKey() ? "" : p.credential_id, now));
    return Audit(tx, now, p.user.id, "session.revoked_others", std::to_string(n), p.ip);
  }));
  return n;
}

Status Accounts::ChangePassword(const Principal& p, const ChangePasswordRequest& req) {
  GPUNEX_RETURN_IF_ERROR(RequireSession(p, "change the password"));
  FieldErrors errors;
  if (req.current_password.empty()) errors["current_password"] = "is required";
  if (std::string why = CheckPasswordStrength(req.new_password, p.user.email, p.user.name);
      !why.empty()) {
    errors["new_password"] = why;
  } else if (req.new_password.size() > kMaxPassword) {
    errors["new_password"] = "must be at most " + std::to_string(kMaxPassword) + " characters";
  } else if (req.new_password == req.current_password) {
    errors["new_password"] = "must differ from the current password";
  }
  std::string current_hash;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<UserRow> u, AccountsStore(tx).FindActiveUser(p.user.id));
    if (!u) return Unauthenticated("the account is disabled");
    current_hash = u->password_hash;
    return Status::Ok();
  }));
  // Both problems at once, so that fixing one does not reveal the other.
  if (!req.current_password.empty()) {
    GPUNEX_ASSIGN_OR_RETURN(bool verified, VerifyPassword(current_hash, req.current_password));
    if (!verified) errors["current_password"] = "is not the account's password";
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  GPUNEX_ASSIGN_OR_RETURN(std::string hash, HashPassword(req.new_password));
  const Timestamp now = options_.clock->Now();
  return db_.Transact([&](store::Tx& tx) -> Status {
    AccountsStore s(tx);
    GPUNEX_RETURN_IF_ERROR(s.SetPasswordHash(p.user.id, hash));
    GPUNEX_ASSIGN_OR_RETURN(int64_t ended, s.RevokeOtherSessions(p.user.id, p.credential_id, now));
    return Audit(tx, now, p.user.id, "password.changed", p.user.id, p.ip,
                 {{"sessions_ended", std::to_string(ended)}});
  });
}

StatusOr<bool> Accounts::CheckPassword(const Principal& p, std::string_view password) const {
  std::string hash;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<UserRow> u, AccountsStore(tx).FindActiveUser(p.user.id));
    if (!u) return Unauthenticated("the account is disabled");
    hash = u->password_hash;
    return Status::Ok();
  }));
  return VerifyPassword(hash, password);
}

StatusOr<User> Accounts::CreateAdmin(std::string_view email, std::string_view password,
                                     std::string_view name) {
  std::string normalized;
  if (std::string why = CheckEmail(email, &normalized); !why.empty())
    return FieldError("email", why);
  const std::string clean_name = CleanName(name);
  if (std::string why = CheckPasswordStrength(password, normalized, clean_name); !why.empty()) {
    return FieldError("password", why);
  }
  GPUNEX_ASSIGN_OR_RETURN(std::string hash, HashPassword(password));
  const Timestamp now = options_.clock->Now();
  User out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    AccountsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<UserRow> existing, s.FindUserByEmail(normalized));
    std::string id;
    if (!existing) {
      id = NewId("usr");
      GPUNEX_RETURN_IF_ERROR(s.InsertUser(
          {id, normalized, clean_name.empty() ? "Administrator" : clean_name, hash, now, false}));
      GPUNEX_RETURN_IF_ERROR(GrantRole(tx, now, id, kRoleCustomer, id));
    } else {
      id = existing->id;
      GPUNEX_RETURN_IF_ERROR(s.SetPasswordHash(id, hash));
    }
    GPUNEX_RETURN_IF_ERROR(GrantRole(tx, now, id, kRoleAdmin, id));
    // The operator who runs the command vouches for the address.
    GPUNEX_RETURN_IF_ERROR(notify::EmailVerifier::MarkVerified(tx, now, id, normalized));
    GPUNEX_RETURN_IF_ERROR(Audit(tx, now, std::nullopt, "admin.created", id, "cli"));
    GPUNEX_ASSIGN_OR_RETURN(out, LoadUser(tx, id));
    return Status::Ok();
  }));
  return out;
}

}  // namespace gpunex::platform::accounts
