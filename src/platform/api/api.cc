#include "platform/api/api.h"

#include <memory>

#include "common/ids.h"
#include "common/log.h"
#include "platform/web/static_site.h"

namespace gpunex::platform::api {

StatusOr<accounts::Principal> RequireUser(const http::Request& req, const ApiContext& ctx) {
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
  const bool safe = req.method == "GET" || req.method == "HEAD" || req.method == "OPTIONS";
  if (!safe && !ConstantTimeEquals(req.Header("x-csrf-token"), p.csrf_token)) {
    return PermissionDenied("missing or wrong X-CSRF-Token header for a cookie session");
  }
  return p;
}

StatusOr<json::value> JsonBody(const http::Request& req) {
  std::string ct = req.Header("content-type");
  if (!ct.starts_with("application/json")) {
    return Status(StatusCode::kInvalidArgument, "the request body must be JSON",
                  FieldErrors{{"body", "Content-Type must be application/json"}});
  }
  return ParseJson(req.body);
}

http::Response Reply(int status, const StatusOr<json::object>& result) {
  if (!result.ok()) return http::ErrorResponse(result.status());
  return http::Response::Json(status, *result);
}

http::Response WithCommonHeaders(const http::Request& req, http::Response resp) {
  resp.SetHeader("X-Content-Type-Options", "nosniff");
  resp.SetHeader("X-Frame-Options", "DENY");
  resp.SetHeader("Referrer-Policy", "same-origin");
  if (req.path.starts_with("/api/") && resp.GetHeader("Cache-Control").empty()) {
    resp.SetHeader("Cache-Control", "no-store");
  }
  if (req.tls) resp.SetHeader("Strict-Transport-Security", "max-age=31536000");
  return resp;
}

namespace {

// Every route but the dashboard's: the REST API, /healthz, /agent/install.sh, ...
void RegisterApiRoutes(http::Router& router, const ApiContext& ctx) {
  RegisterSystemRoutes(router, ctx);
  RegisterAuthRoutes(router, ctx);
  RegisterApplicationRoutes(router, ctx);
  RegisterProviderRoutes(router, ctx);
  RegisterCatalogRoutes(router, ctx);
  RegisterNotificationRoutes(router, ctx);
  RegisterMachineRoutes(router, ctx);
  RegisterWorkloadRoutes(router, ctx);
  RegisterAgentRoutes(router, ctx);
  RegisterBenchmarkRoutes(router, ctx);
}

}  // namespace

void RegisterRoutes(http::Router& router, const ApiContext& ctx) {
  RegisterApiRoutes(router, ctx);
  // The web dashboard answers every other path (web/static_site.h). It first asks a
  // router holding only the routes above, so that an unknown API path still gets the
  // API's 404 and a known path with another method its 405 with Allow.
  auto api_only = std::make_shared<http::Router>();
  RegisterApiRoutes(*api_only, ctx);
  web::RegisterRoutes(router, web::EmbeddedSite(),
                      [api_only](http::Request& req) { return api_only->Dispatch(req); });
}

}  // namespace gpunex::platform::api
