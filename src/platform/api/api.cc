#include "platform/api/api.h"

#include <any>
#include <charconv>
#include <limits>
#include <memory>

#include "common/ids.h"
#include "common/log.h"
#include "platform/web/static_site.h"

namespace gpunex::platform::api {

StatusOr<accounts::Principal> RequireUser(const http::Request& req, const ApiContext&) {
  if (const auto* p = std::any_cast<accounts::Principal>(&req.caller)) return *p;
  return Unauthenticated("log in first");
}

StatusOr<json::value> JsonBody(const http::Request& req) {
  std::string ct = req.Header("content-type");
  if (!ct.starts_with("application/json")) {
    return Status(StatusCode::kInvalidArgument, "the request body must be JSON",
                  FieldErrors{{"body", "Content-Type must be application/json"}});
  }
  return ParseJson(req.body);
}

StatusOr<json::object> JsonObjectBody(const http::Request& req) {
  GPUNEX_ASSIGN_OR_RETURN(json::value v, JsonBody(req));
  if (!v.is_object()) return FieldError("body", "must be a JSON object");
  return std::move(v.get_object());
}

StatusOr<PageRequest> ParsePageRequest(const http::Request& req, PageLimits limits) {
  FieldErrors errors;
  PageRequest page;
  page.limit = limits.default_limit;
  if (const std::string limit = req.Query("limit"); !limit.empty()) {
    int v = 0;
    auto [end, ec] = std::from_chars(limit.data(), limit.data() + limit.size(), v);
    if (ec != std::errc() || end != limit.data() + limit.size() || v < 1 || v > limits.max_limit) {
      errors.emplace("limit", "must be an integer from 1 to " + std::to_string(limits.max_limit));
    } else {
      page.limit = v;
    }
  }
  if (const std::string cursor = req.Query("cursor"); !cursor.empty()) {
    auto c = Cursor::Decode(cursor);
    if (c.ok()) {
      page.after = std::move(*c);
    } else {
      errors.merge(FieldErrors(c.status().fields()));
    }
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return page;
}

json::value TimeJson(const std::optional<Timestamp>& t) {
  return t ? json::value(FormatRfc3339(*t)) : json::value(nullptr);
}

json::value OptJson(const std::optional<std::string>& s) {
  return s ? json::value(*s) : json::value(nullptr);
}

std::string CsvField(std::string_view s) {
  std::string v(s);
  // A spreadsheet would run a cell that starts like a formula: keep it text (numbers
  // such as "-5.000000" stay numbers).
  const bool number = !v.empty() && v.find_first_not_of("-.0123456789") == std::string::npos;
  if (!number && !v.empty() && (v[0] == '=' || v[0] == '+' || v[0] == '-' || v[0] == '@'))
    v = "'" + v;
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

StatusOr<std::pair<Timestamp, Timestamp>> DateRange(const http::Request& req) {
  FieldErrors errors;
  auto parse = [&](const char* name, Timestamp fallback) {
    std::string v = req.Query(name);
    if (v.empty()) return fallback;
    if (v.size() == 10) v += "T00:00:00Z";
    auto t = ParseRfc3339(v);
    if (!t) {
      errors.emplace(name, "must be a date (2026-12-01) or an RFC 3339 time");
      return fallback;
    }
    return *t;
  };
  const Timestamp from = parse("from", FromUnixMicros(0));
  const Timestamp to = parse("to", FromUnixMicros(std::numeric_limits<int64_t>::max()));
  if (errors.empty() && to < from) errors.emplace("to", "must not be before from");
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return std::make_pair(from, to);
}

http::Response Reply(int status, const StatusOr<json::object>& result) {
  if (!result.ok()) return http::ErrorResponse(result.status());
  return http::Response::Json(status, *result);
}

http::Response WithCommonHeaders(const http::Request& req, http::Response resp) {
  return std::move(resp).Then(
      [api = req.path.starts_with("/api/"), tls = req.tls](http::Response r) {
        r.SetHeader("X-Content-Type-Options", "nosniff");
        r.SetHeader("X-Frame-Options", "DENY");
        r.SetHeader("Referrer-Policy", "same-origin");
        if (api && r.GetHeader("Cache-Control").empty()) r.SetHeader("Cache-Control", "no-store");
        if (tls) r.SetHeader("Strict-Transport-Security", "max-age=31536000");
        return r;
      });
}

namespace {

bool IsRead(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS";
}

// Whether the request carries credentials (for kPublicOrUser).
bool HasCredentials(const http::Request& req) {
  return !req.Header("authorization").empty() || !req.Cookie(kSessionCookie).empty();
}

// The caller, from "Authorization: Bearer" or the session cookie. Cookie-authenticated
// requests that change state must carry the session's CSRF token in X-CSRF-Token.
StatusOr<accounts::Principal> Authenticate(const http::Request& req, const ApiContext& ctx) {
  std::string auth = req.Header("authorization");
  if (!auth.empty()) {
    constexpr std::string_view kBearer = "Bearer ";
    if (!auth.starts_with(kBearer)) {
      return Unauthenticated("the Authorization header must be \"Bearer <token>\"");
    }
    return ctx.accounts.Authenticate(std::string_view(auth).substr(kBearer.size()), false,
                                     req.remote_addr);
  }
  std::string cookie = req.Cookie(kSessionCookie);
  if (cookie.empty()) return Unauthenticated("log in first");
  GPUNEX_ASSIGN_OR_RETURN(accounts::Principal p,
                          ctx.accounts.Authenticate(cookie, true, req.remote_addr));
  if (!IsRead(req.method) && !ConstantTimeEquals(req.Header("x-csrf-token"), p.csrf_token)) {
    return PermissionDenied("missing or wrong X-CSRF-Token header for a cookie session");
  }
  return p;
}

// Whether `p` may use a route of `route_access` with `method`; a refusal names the scope (an
// API key) or the role (a session) that is missing.
Status CheckAccess(const accounts::Principal& p, std::string_view method,
                   std::string_view route_access) {
  using accounts::kRoleAdmin;
  using accounts::kRoleProvider;
  if (IsRead(method) && !p.HasScope(accounts::kScopeRead)) {
    return PermissionDenied("this API key may not read (it has no read scope)");
  }
  if (!IsRead(method) && !p.HasScope(accounts::kScopeWrite)) {
    return PermissionDenied("this API key may only read (it has no write scope)");
  }
  // A key's roles are its owner's less those its scopes leave out (accounts.h).
  auto missing = [&](std::string_view role) {
    return PermissionDenied(p.IsApiKey() ? "this API key has no " + std::string(role) + " scope"
                                         : "this needs the " + std::string(role) + " role");
  };
  if ((route_access == kProvider || route_access == kProviderSession) &&
      !p.user.HasRole(kRoleProvider)) {
    return missing(kRoleProvider);
  }
  if (route_access == kAdmin && !p.user.HasRole(kRoleAdmin)) return missing(kRoleAdmin);
  if (route_access == kProviderOrAdmin && !p.user.HasRole(kRoleProvider) &&
      !p.user.HasRole(kRoleAdmin)) {
    return PermissionDenied(p.IsApiKey() ? "this API key has no provider scope and no admin scope"
                                         : "this needs the provider or the admin role");
  }
  if ((route_access == kSession || route_access == kProviderSession) && p.IsApiKey()) {
    return PermissionDenied(
        "an API key cannot make credentials or change the password; log in to do it");
  }
  return Status::Ok();
}

// Whether a request's answer may be kept under its Idempotency-Key.
bool KeepsIdempotentAnswer(const http::Request& req) {
  if (req.method != "POST" && req.method != "PUT" && req.method != "PATCH" &&
      req.method != "DELETE")
    return false;
  if (!req.path.starts_with("/api/v1/")) return false;
  // Log-in and sign-up, and answers that hold a secret shown once.
  if (req.path.starts_with("/api/v1/auth/")) return false;
  if (req.path == "/api/v1/api-keys") return false;
  if (req.path.starts_with("/api/v1/providers/me/agent-tokens")) return false;
  return true;
}

// What an Idempotency-Key keeps of its request: a hash of the method, path and body,
// without a rental's registry_auth (a hash of a short password could be guessed back).
std::string IdempotencyHash(const http::Request& req) {
  std::string body = req.body;
  if (body.find("\"registry_auth\"") != std::string::npos) {
    if (auto v = ParseJson(body);
        v.ok() && v->is_object() && v->get_object().erase("registry_auth")) {
      body = ToJsonText(*v);
    }
  }
  return Sha256Hex(req.method + "\n" + req.path + "\n" + body);
}

// Runs `handler` for `p`, answering once per Idempotency-Key (api.h, Dispatch).
http::Response RunIdempotent(const ApiContext& ctx, const accounts::Principal& p,
                             http::Request& req, const http::Handler& handler) {
  const std::string key = req.Header("idempotency-key");
  if (key.empty() || !KeepsIdempotentAnswer(req)) return handler(req);
  const std::string hash = IdempotencyHash(req);
  auto claim = ctx.idempotency.Begin(p.user.id, key, hash);
  if (!claim.ok()) return http::ErrorResponse(claim.status());
  if (claim->replay) {
    http::Response resp;
    resp.status = claim->response.status;
    resp.body = claim->response.body;
    if (!claim->response.content_type.empty())
      resp.SetHeader("Content-Type", claim->response.content_type);
    resp.SetHeader("Idempotent-Replayed", "true");
    return resp;
  }
  // Kept once the answer is known (a deferred one's when it comes).
  return handler(req).Then(
      [&ctx, user = p.user.id, key, claim = *claim, path = req.path](http::Response resp) {
        Status kept =
            resp.status >= 500
                ? ctx.idempotency.Abandon(user, key, claim)
                : ctx.idempotency.Complete(
                      user, key, claim, {resp.status, resp.GetHeader("Content-Type"), resp.body});
        if (!kept.ok())
          LogWarn("api.idempotency_record_failed", {{"path", path}, {"error", kept.ToString()}});
        return resp;
      });
}

// "scheme://host[:port]" of a URL.
std::string OriginOf(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  const size_t path = url.find('/', scheme + 3);
  return std::string(url.substr(0, path));
}

}  // namespace

StatusOr<accounts::Principal> AuthenticateRequest(const http::Request& req, const ApiContext& ctx,
                                                  std::string_view access) {
  GPUNEX_ASSIGN_OR_RETURN(accounts::Principal p, Authenticate(req, ctx));
  GPUNEX_RETURN_IF_ERROR(CheckAccess(p, req.method, access));
  return p;
}

StatusOr<accounts::Principal> AuthenticateUpgrade(const http::Request& req, const ApiContext& ctx,
                                                  std::string_view access) {
  if (req.Header("authorization").empty() && !req.Cookie(kSessionCookie).empty() &&
      req.Header("origin") != OriginOf(ctx.config.public_url)) {
    return PermissionDenied("a WebSocket with the session cookie must come from a page of " +
                            OriginOf(ctx.config.public_url));
  }
  GPUNEX_ASSIGN_OR_RETURN(accounts::Principal p, Authenticate(req, ctx));
  // What flows over the socket can change things: an API key needs the write scope.
  GPUNEX_RETURN_IF_ERROR(CheckAccess(p, "POST", access));
  return p;
}

namespace {

// The one place where every route's caller is let in or refused (api.h, access).
class ApiGuard final : public http::Guard {
 public:
  explicit ApiGuard(const ApiContext& ctx) : ctx_(ctx) {}

  bool Knows(std::string_view a) const override {
    for (std::string_view known : {kPublic, kPublicOrUser, kUser, kProvider, kProviderOrAdmin,
                                   kAdmin, kSession, kProviderSession}) {
      if (a == known) return true;
    }
    return false;
  }

  http::Response Run(http::Request& req, std::string_view a,
                     const http::Handler& handler) const override {
    req.caller.reset();
    if (a == kPublic || (a == kPublicOrUser && !HasCredentials(req))) {
      return handler(req);
    }
    auto p = Authenticate(req, ctx_);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (Status st = CheckAccess(*p, req.method, a); !st.ok()) return http::ErrorResponse(st);
    req.caller = *p;
    return RunIdempotent(ctx_, *p, req, handler);
  }

 private:
  const ApiContext& ctx_;
};

}  // namespace

http::Response Dispatch(const ApiContext&, const http::Router& router, http::Request& req) {
  return router.Dispatch(req);
}

namespace {

// Every route but the dashboard's: /healthz, /agent/install.sh, ... and the modules'.
void RegisterApiRoutes(http::Router& router, const ApiContext& ctx,
                       const std::vector<Module>& modules) {
  RegisterSystemRoutes(router, ctx);
  for (const Module& m : modules) {
    if (m.routes) m.routes(router, ctx);
  }
}

}  // namespace

void RegisterRoutes(http::Router& router, const ApiContext& ctx,
                    const std::vector<Module>& modules) {
  auto guard = std::make_shared<ApiGuard>(ctx);
  router.SetGuard(guard);
  RegisterApiRoutes(router, ctx, modules);
  // The web dashboard answers every other path (web/static_site.h). It first asks a
  // router holding only the routes above, so that an unknown API path still gets the
  // API's 404 and a known path with another method its 405 with Allow.
  auto api_only = std::make_shared<http::Router>();
  api_only->SetGuard(guard);
  RegisterApiRoutes(*api_only, ctx, modules);
  web::RegisterRoutes(router, web::EmbeddedSite(), kPublic,
                      [api_only](http::Request& req) { return api_only->Dispatch(req); });
}

std::optional<applications::Availability> DecodeSchedule(const JsonReader& parent,
                                                         std::string_view key, bool required) {
  const json::object* o = parent.Object(key, required);
  if (!o) return std::nullopt;
  JsonReader r(*o, parent.PathOf(key), parent.errors());
  auto text = r.String("kind", true, 16);
  if (!text) return std::nullopt;
  const auto kind = applications::kAvailabilityKindNames.Parse(*text);
  if (!kind) {
    r.Fail("kind", "must be " + applications::kAvailabilityKindNames.Listed());
    return std::nullopt;
  }
  applications::Availability a;
  if (*kind == applications::AvailabilityKind::kAlways) {
    r.RejectUnknown({"kind"});
    return a;
  }
  a.always = false;
  r.RejectUnknown({"kind", "timezone", "windows"});
  a.timezone = r.String("timezone", true, applications::kMaxTimeZone).value_or("");
  if (const json::array* ws = r.Array("windows", true, 1, applications::kMaxWindows)) {
    for (size_t i = 0; i < ws->size(); ++i) {
      const std::string path = r.PathOf("windows") + "[" + std::to_string(i) + "]";
      // Undecodable elements stay as empty placeholders, so that the domain's errors keep
      // their indexes (and those under `path` are dropped, see Merge).
      applications::Window& win = a.windows.emplace_back();
      if (!(*ws)[i].is_object()) {
        parent.errors()->emplace(path, "must be an object");
        continue;
      }
      JsonReader w((*ws)[i].get_object(), path, parent.errors());
      w.RejectUnknown({"days", "start", "end"});
      if (const json::array* days = w.Array("days", true, 1, 7)) {
        for (const json::value& d : *days) {
          if (!d.is_string()) {
            w.Fail("days", "must list days as \"mon\" .. \"sun\"");
            break;
          }
          win.days.emplace_back(d.get_string());
        }
      }
      win.start = w.String("start", true, 5).value_or("");
      win.end = w.String("end", true, 5).value_or("");
    }
  }
  return a;
}

json::object ScheduleJson(const applications::Availability& a) {
  if (a.always) return {{"kind", Name(applications::AvailabilityKind::kAlways)}};
  json::array windows;
  for (const applications::Window& w : a.windows) {
    json::array days;
    for (const std::string& d : w.days) days.emplace_back(d);
    windows.push_back(json::object{{"days", std::move(days)}, {"start", w.start}, {"end", w.end}});
  }
  return {{"kind", Name(applications::AvailabilityKind::kSchedule)},
          {"timezone", a.timezone},
          {"windows", std::move(windows)}};
}

namespace {

// Whether `path` is `prefix` or lies under it ("gpus[0]" holds "gpus[0].model").
bool Under(std::string_view path, std::string_view prefix) {
  if (!path.starts_with(prefix)) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '.' || path[prefix.size()] == '[';
}

}  // namespace

// The decoding errors plus the domain's errors on what was decoded, less those about
// values that could not be decoded (reported already).
Status MergeFieldErrors(FieldErrors decoded, const FieldErrors& domain) {
  for (const auto& [path, message] : domain) {
    bool covered = false;
    for (const auto& [bad, unused] : decoded) covered = covered || Under(path, bad);
    if (!covered) decoded.emplace(path, message);
  }
  return ValidationFailed(std::move(decoded));
}

}  // namespace gpunex::platform::api
