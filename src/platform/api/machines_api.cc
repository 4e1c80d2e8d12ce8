// /api/v1/machines
#include "platform/api/api.h"

namespace gpunex::platform::api {

void RegisterMachineRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("GET", "/api/v1/machines", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return Reply(200, ctx.fleet.ListMachines(*p, req.Query("limit"), req.Query("cursor")));
  });
  r.Add("GET", "/api/v1/machines/{id}", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return Reply(200, ctx.fleet.GetMachine(*p, req.Param("id")));
  });
  r.Add("PATCH", "/api/v1/machines/{id}/gpus/{gpu_id}", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto body = JsonBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    return Reply(200, ctx.fleet.PatchGpu(*p, req.Param("id"), req.Param("gpu_id"), *body));
  });
}

}  // namespace gpunex::platform::api
