// /api/v1/provider-applications
#include "platform/api/api.h"

namespace gpunex::platform::api {

void RegisterApplicationRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("POST", "/api/v1/provider-applications", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto body = JsonBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    auto res = ctx.applications.Create(*p, *body);
    if (res.ok() && res->at("status") == "submitted") ctx.wake_outbox();
    return Reply(201, res);
  });

  r.Add("GET", "/api/v1/provider-applications", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return Reply(200, ctx.applications.List(*p, req.Query("status"), req.Query("limit"),
                                            req.Query("cursor")));
  });

  r.Add("GET", "/api/v1/provider-applications/{id}", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return Reply(200, ctx.applications.Get(*p, req.Param("id")));
  });

  r.Add("PUT", "/api/v1/provider-applications/{id}", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto body = JsonBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    return Reply(200, ctx.applications.Update(*p, req.Param("id"), *body));
  });

  r.Add("POST", "/api/v1/provider-applications/{id}/submit", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto res = ctx.applications.Submit(*p, req.Param("id"));
    if (res.ok()) ctx.wake_outbox();
    return Reply(200, res);
  });

  r.Add("POST", "/api/v1/provider-applications/{id}/decision", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto body = JsonBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    auto res = ctx.applications.Decide(*p, req.Param("id"), *body);
    if (res.ok()) ctx.wake_outbox();
    return Reply(200, res);
  });
}

}  // namespace gpunex::platform::api
