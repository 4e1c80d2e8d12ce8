// /api/v1/providers/me and its agent tokens
#include "platform/api/api.h"

namespace gpunex::platform::api {
namespace {

http::Response TokenCreated(const ApiContext& ctx,
                            const StatusOr<std::pair<providers::AgentToken, std::string>>& t) {
  if (!t.ok()) return http::ErrorResponse(t.status());
  json::object o = providers::ToJson(t->first);
  o["token"] = t->second;  // shown once
  o["install_command"] = providers::InstallCommand(ctx.config.public_url, t->second);
  return http::Response::Json(201, o);
}

}  // namespace

void RegisterProviderRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("GET", "/api/v1/providers/me", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto prov = ctx.providers.Get(*p);
    if (!prov.ok()) return http::ErrorResponse(prov.status());
    return http::Response::Json(200, providers::ToJson(*prov));
  });

  r.Add("POST", "/api/v1/providers/me/agent-tokens", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    json::value body = json::object{};
    if (!req.body.empty()) {
      auto parsed = JsonBody(req);
      if (!parsed.ok()) return http::ErrorResponse(parsed.status());
      body = std::move(*parsed);
    }
    return TokenCreated(ctx, ctx.providers.CreateToken(*p, body));
  });

  r.Add("GET", "/api/v1/providers/me/agent-tokens", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto tokens = ctx.providers.ListTokens(*p);
    if (!tokens.ok()) return http::ErrorResponse(tokens.status());
    json::array items;
    for (const auto& t : *tokens) items.push_back(providers::ToJson(t));
    return http::Response::Json(200, json::object{{"items", std::move(items)}, {"next_cursor", nullptr}});
  });

  r.Add("DELETE", "/api/v1/providers/me/agent-tokens/{id}", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    Status st = ctx.providers.RevokeToken(*p, req.Param("id"));
    if (!st.ok()) return http::ErrorResponse(st);
    ctx.fleet.CloseSessionsForToken(req.Param("id"));
    return http::Response::NoContent();
  });

  r.Add("POST", "/api/v1/providers/me/agent-tokens/{id}/rotate", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto rotated = ctx.providers.RotateToken(*p, req.Param("id"));
    if (rotated.ok()) ctx.fleet.CloseSessionsForToken(req.Param("id"));
    return TokenCreated(ctx, rotated);
  });
}

}  // namespace gpunex::platform::api
