// /api/v1/gpu-models
#include "platform/api/api.h"
#include "platform/catalog/catalog.h"

namespace gpunex::platform::api {

void RegisterCatalogRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("GET", "/api/v1/gpu-models", [&ctx](http::Request&) {
    http::Response resp = Reply(200, catalog::ListModels(ctx.db));
    return resp;
  });
  r.Add("POST", "/api/v1/gpu-models", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (!p->IsAdmin()) return http::ErrorResponse(PermissionDenied("only admins can add GPU models"));
    auto body = JsonBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    return Reply(201, catalog::AddModel(ctx.db, *p, *body));
  });
}

}  // namespace gpunex::platform::api
