// /api/v1/machines/{id}/benchmarks: benchmark runs of a machine (BEN-6) and re-runs on
// request.
#include "platform/api/api.h"

namespace gpunex::platform::api {

void RegisterBenchmarkRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("GET", "/api/v1/machines/{id}/benchmarks", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return Reply(200, ctx.benchmarks.List(*p, req.Param("id"), req.Query("limit"), req.Query("cursor")));
  });
  r.Add("POST", "/api/v1/machines/{id}/benchmarks", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return Reply(202, ctx.benchmarks.Request(*p, req.Param("id")));
  });
}

}  // namespace gpunex::platform::api
