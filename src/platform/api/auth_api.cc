// /api/v1/auth/*, /api/v1/me, /api/v1/me/password, /api/v1/me/sessions, /api/v1/me/emails,
// /api/v1/api-keys
#include <memory>

#include "platform/api/api.h"
#include "platform/http/rate_limit.h"

namespace gpunex::platform::api {

json::object UserJson(const accounts::User& u) {
  json::array roles;
  for (const auto& r : u.roles) roles.emplace_back(r);
  return {{"id", u.id},
          {"email", u.email},
          {"name", u.name},
          {"roles", std::move(roles)},
          {"created_at", FormatRfc3339(u.created_at)}};
}

namespace {

// A verification token is about 200 characters (notify/verify.h).
constexpr size_t kMaxVerificationToken = 1024;

json::array ScopesJson(const std::vector<std::string>& scopes) {
  json::array out;
  for (const auto& s : scopes) out.emplace_back(s);
  return out;
}

json::object ApiKeyJson(const accounts::ApiKey& k) {
  return {{"id", k.id},
          {"name", k.name},
          {"prefix", k.prefix},
          {"created_at", FormatRfc3339(k.created_at)},
          {"last_used_at", TimeJson(k.last_used_at)},
          {"revoked_at", TimeJson(k.revoked_at)},
          {"scopes", ScopesJson(k.scopes)}};
}

json::object SessionJson(const accounts::SessionInfo& s) {
  return {{"id", s.id},
          {"created_at", FormatRfc3339(s.created_at)},
          {"last_seen_at", FormatRfc3339(s.last_seen_at)},
          {"expires_at", FormatRfc3339(s.expires_at)},
          {"ip", s.ip},
          {"user_agent", s.user_agent},
          {"current", s.current}};
}

StatusOr<accounts::SignUpRequest> DecodeSignUp(const json::object& body) {
  FieldErrors errors;
  JsonReader r(body, "", &errors);
  r.RejectUnknown({"email", "password", "name"});
  accounts::SignUpRequest req;
  req.email = r.String("email", true, accounts::Accounts::kMaxEmail).value_or("");
  req.password = r.String("password", true, accounts::Accounts::kMaxPassword).value_or("");
  req.name = r.String("name", true, accounts::Accounts::kMaxName).value_or("");
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return req;
}

StatusOr<accounts::LoginRequest> DecodeLogin(const json::object& body) {
  FieldErrors errors;
  JsonReader r(body, "", &errors);
  r.RejectUnknown({"email", "password"});
  accounts::LoginRequest req;
  req.email = r.String("email", true, accounts::Accounts::kMaxEmail).value_or("");
  req.password = r.String("password", true, accounts::Accounts::kMaxPassword).value_or("");
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return req;
}

struct ApiKeyRequest {
  std::string name;
  std::vector<std::string> scopes;
};

// {name, scopes?}: without scopes a key may read and write, with none of the provider's
// or admin's powers (ask for those by name).
StatusOr<ApiKeyRequest> DecodeApiKey(const json::object& body) {
  FieldErrors errors;
  JsonReader r(body, "", &errors);
  r.RejectUnknown({"name", "scopes"});
  ApiKeyRequest out;
  out.name = r.String("name", true, accounts::Accounts::kMaxApiKeyName).value_or("");
  if (!r.Has("scopes")) {
    out.scopes = {std::string(accounts::kScopeRead), std::string(accounts::kScopeWrite)};
  } else if (const json::array* a = r.Array("scopes", true, 1, 4)) {
    for (size_t i = 0; i < a->size(); ++i) {
      if (!(*a)[i].is_string() || (*a)[i].as_string().size() > 16) {
        errors["scopes[" + std::to_string(i) + "]"] = "must be one of read, write, provider, admin";
        continue;
      }
      out.scopes.emplace_back((*a)[i].as_string());
    }
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return out;
}

StatusOr<accounts::ChangePasswordRequest> DecodeChangePassword(const json::object& body) {
  FieldErrors errors;
  JsonReader r(body, "", &errors);
  r.RejectUnknown({"current_password", "new_password"});
  accounts::ChangePasswordRequest req;
  req.current_password =
      r.String("current_password", true, accounts::Accounts::kMaxPassword).value_or("");
  // Longer than the limit is the domain's error, with its message.
  req.new_password =
      r.String("new_password", true, 4 * accounts::Accounts::kMaxPassword).value_or("");
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return req;
}

// A refusal by the password gate is retried in a second.
http::Response WithBusyRetry(http::Response resp, const Status& st) {
  if (st.message() == accounts::PasswordGate::kBusy) resp.SetHeader("Retry-After", "1");
  return resp;
}

std::string CookieAttrs(const ApiContext& ctx) {
  return std::string("; Path=/; SameSite=Strict") + (ctx.config.CookieSecure() ? "; Secure" : "");
}

}  // namespace

void RegisterAuthRoutes(http::Router& r, const ApiContext& ctx) {
  // Sign-ups per client address: a token bucket of signups_per_address_per_hour.
  auto signups = std::make_shared<http::RateLimiter>(
      ctx.accounts.options().signups_per_address_per_hour / 3600.0,
      ctx.accounts.options().signups_per_address_per_hour, 100'000, &ctx.clock);
  r.Add("POST", "/api/v1/auth/signup", kPublic, [&ctx, signups](http::Request& req) {
    int64_t retry = 0;
    if (!signups->Allow(req.remote_addr, &retry)) {
      http::Response resp = http::ErrorResponse(
          ResourceExhausted("too many sign-ups from this address; retry later"));
      resp.SetHeader("Retry-After", std::to_string(retry));
      return resp;
    }
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    auto signup = DecodeSignUp(*body);
    if (!signup.ok()) return http::ErrorResponse(signup.status());
    auto user = ctx.accounts.SignUp(*signup, req.remote_addr);
    if (!user.ok()) return WithBusyRetry(http::ErrorResponse(user.status()), user.status());
    return http::Response::Json(201, json::object{{"user", UserJson(*user)}});
  });

  r.Add("POST", "/api/v1/auth/login", kPublic, [&ctx](http::Request& req) {
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    auto credentials = DecodeLogin(*body);
    if (!credentials.ok()) return http::ErrorResponse(credentials.status());
    auto login = ctx.accounts.Login(*credentials, req.remote_addr, req.Header("user-agent"));
    if (!login.ok()) {
      http::Response resp = http::ErrorResponse(login.status());
      if (login.status().message() == accounts::PasswordGate::kBusy) {
        return WithBusyRetry(std::move(resp), login.status());
      }
      if (login.status().code() == StatusCode::kResourceExhausted) {
        resp.SetHeader("Retry-After",
                       std::to_string(ctx.accounts.options().login_window_minutes * 60));
      }
      return resp;
    }
    http::Response resp =
        http::Response::Json(200, json::object{{"token", login->token},
                                               {"csrf_token", login->csrf_token},
                                               {"csrf_header", kCsrfHeader},
                                               {"expires_at", FormatRfc3339(login->expires_at)},
                                               {"user", UserJson(login->user)}});
    const int64_t max_age = ctx.accounts.options().session_ttl_hours * 3600LL;
    resp.headers.emplace_back("Set-Cookie", std::string(kSessionCookie) + "=" + login->token +
                                                CookieAttrs(ctx) +
                                                "; HttpOnly; Max-Age=" + std::to_string(max_age));
    // Readable by the dashboard's script so that it can send the CSRF header.
    resp.headers.emplace_back("Set-Cookie", std::string(kCsrfCookie) + "=" + login->csrf_token +
                                                CookieAttrs(ctx) +
                                                "; Max-Age=" + std::to_string(max_age));
    return resp;
  });

  r.Add("POST", "/api/v1/auth/logout", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    Status st = ctx.accounts.Logout(*p);
    if (!st.ok()) return http::ErrorResponse(st);
    http::Response resp = http::Response::NoContent();
    resp.headers.emplace_back("Set-Cookie", std::string(kSessionCookie) + "=" + CookieAttrs(ctx) +
                                                "; HttpOnly; Max-Age=0");
    resp.headers.emplace_back("Set-Cookie",
                              std::string(kCsrfCookie) + "=" + CookieAttrs(ctx) + "; Max-Age=0");
    return resp;
  });

  r.Add("GET", "/api/v1/me", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    json::object me = UserJson(p->user);
    if (p->via != accounts::Principal::Via::kApiKey) me["csrf_token"] = p->csrf_token;
    auto verified = ctx.verifier.IsVerified(ctx.db, p->user.id, p->user.email);
    if (!verified.ok()) return http::ErrorResponse(verified.status());
    me["email_verified"] = *verified;
    return http::Response::Json(200, me);
  });

  // Email verification (notify/verify.h): the link's page posts its token; no log-in needed.
  r.Add("POST", "/api/v1/auth/verify-email", kPublic, [&ctx](http::Request& req) {
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    FieldErrors errors;
    JsonReader rd(*body, "", &errors);
    rd.RejectUnknown({"token"});
    const std::string token = rd.String("token", true, kMaxVerificationToken).value_or("");
    if (!errors.empty()) return http::ErrorResponse(ValidationFailed(std::move(errors)));
    auto verified = ctx.verifier.Verify(ctx.db, token);
    if (!verified.ok()) return http::ErrorResponse(verified.status());
    return http::Response::Json(200, json::object{{"email", verified->address},
                                                  {"verified", true},
                                                  {"already_verified", verified->already},
                                                  {"released_emails", verified->released}});
  });

  r.Add("GET", "/api/v1/me/emails", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto list = ctx.verifier.List(ctx.db, p->user.id);
    if (!list.ok()) return http::ErrorResponse(list.status());
    json::array items;
    for (const notify::AddressState& a : *list) {
      items.emplace_back(json::object{{"email", a.address},
                                      {"account", a.account},
                                      {"verified", a.verified_at.has_value()},
                                      {"verified_at", TimeJson(a.verified_at)},
                                      {"last_link_at", TimeJson(a.last_sent_at)},
                                      {"waiting_emails", a.held_emails}});
    }
    return http::Response::Json(200, json::object{{"items", std::move(items)}});
  });

  r.Add("POST", "/api/v1/me/emails/resend", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    FieldErrors errors;
    JsonReader rd(*body, "", &errors);
    rd.RejectUnknown({"email"});
    const std::string email = rd.String("email", true, accounts::Accounts::kMaxEmail).value_or("");
    if (!errors.empty()) return http::ErrorResponse(ValidationFailed(std::move(errors)));
    int64_t retry = 0;
    Status st = ctx.verifier.Resend(ctx.db, p->user.id, email, &retry);
    if (!st.ok()) {
      http::Response resp = http::ErrorResponse(st);
      if (st.code() == StatusCode::kResourceExhausted) {
        resp.SetHeader("Retry-After", std::to_string(retry));
      }
      return resp;
    }
    return http::Response::Json(202, json::object{{"email", email}, {"link_sent", true}});
  });

  r.Add("POST", "/api/v1/api-keys", kSession, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    auto key = DecodeApiKey(*body);
    if (!key.ok()) return http::ErrorResponse(key.status());
    auto created = ctx.accounts.CreateApiKey(*p, key->name, key->scopes);
    if (!created.ok()) return http::ErrorResponse(created.status());
    json::object o = ApiKeyJson(created->key);
    o["key"] = created->secret;  // shown once
    return http::Response::Json(201, o);
  });

  r.Add("GET", "/api/v1/api-keys", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto keys = ctx.accounts.ListApiKeys(*p);
    if (!keys.ok()) return http::ErrorResponse(keys.status());
    json::array items;
    for (const auto& k : *keys) items.push_back(ApiKeyJson(k));
    return http::Response::Json(
        200, json::object{{"items", std::move(items)}, {"next_cursor", nullptr}});
  });

  r.Add("DELETE", "/api/v1/api-keys/{id}", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    Status st = ctx.accounts.RevokeApiKey(*p, req.Param("id"));
    if (!st.ok()) return http::ErrorResponse(st);
    return http::Response::NoContent();
  });

  r.Add("POST", "/api/v1/me/password", kSession, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    auto change = DecodeChangePassword(*body);
    if (!change.ok()) return http::ErrorResponse(change.status());
    Status st = ctx.accounts.ChangePassword(*p, *change);
    if (!st.ok()) return WithBusyRetry(http::ErrorResponse(st), st);
    return http::Response::NoContent();
  });

  r.Add("GET", "/api/v1/me/sessions", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto sessions = ctx.accounts.ListSessions(*p);
    if (!sessions.ok()) return http::ErrorResponse(sessions.status());
    json::array items;
    for (const auto& s : *sessions) items.push_back(SessionJson(s));
    return http::Response::Json(
        200, json::object{{"items", std::move(items)}, {"next_cursor", nullptr}});
  });

  r.Add("DELETE", "/api/v1/me/sessions/{id}", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    Status st = ctx.accounts.RevokeSession(*p, req.Param("id"));
    if (!st.ok()) return http::ErrorResponse(st);
    return http::Response::NoContent();
  });

  // "Log out everywhere else".
  r.Add("POST", "/api/v1/me/sessions/revoke-others", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto n = ctx.accounts.RevokeOtherSessions(*p);
    if (!n.ok()) return http::ErrorResponse(n.status());
    return http::Response::Json(200, json::object{{"revoked", *n}});
  });
}

}  // namespace gpunex::platform::api
