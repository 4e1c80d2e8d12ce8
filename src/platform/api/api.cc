#include "platform/api/api.h"

#include "common/ids.h"
#include "common/log.h"

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

void RegisterRoutes(http::Router& router, const ApiContext& ctx) {
  RegisterSystemRoutes(router, ctx);
  RegisterAuthRoutes(router, ctx);
  RegisterApplicationRoutes(router, ctx);
  RegisterProviderRoutes(router, ctx);
  RegisterCatalogRoutes(router, ctx);
  RegisterNotificationRoutes(router, ctx);
  RegisterMachineRoutes(router, ctx);
  RegisterWorkloadRoutes(router, ctx);
  RegisterAgentRoutes(router, ctx);
}

}  // namespace gpunex::platform::api
