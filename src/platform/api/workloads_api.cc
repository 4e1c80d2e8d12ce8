// /api/v1/workloads
#include "platform/api/api.h"

namespace gpunex::platform::api {

void RegisterWorkloadRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("POST", "/api/v1/workloads", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto body = JsonBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    return Reply(201, ctx.workloads.Create(*p, *body));
  });
  r.Add("GET", "/api/v1/workloads", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return Reply(200, ctx.workloads.List(*p, req.Query("machine_id"), req.Query("limit"),
                                         req.Query("cursor")));
  });
  r.Add("GET", "/api/v1/workloads/{id}", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return Reply(200, ctx.workloads.Get(*p, req.Param("id")));
  });
  r.Add("POST", "/api/v1/workloads/{id}/stop", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return Reply(202, ctx.workloads.Stop(*p, req.Param("id")));
  });
  r.Add("GET", "/api/v1/workloads/{id}/logs", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return Reply(200, ctx.workloads.Logs(*p, req.Param("id"), req.Query("after")));
  });
}

}  // namespace gpunex::platform::api
