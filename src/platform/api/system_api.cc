// /healthz, /readyz, /metrics, /api/v1/openapi.json
#include "platform/api/api.h"

namespace gpunex::platform::api {

// docs/openapi.yaml as JSON, embedded at build time (openapi_to_cc.py).
std::string OpenApiJson();

void RegisterSystemRoutes(http::Router& r, const ApiContext& ctx) {
  // Liveness: the process serves requests.
  r.Add("GET", "/healthz", kPublic, [](http::Request&) {
    return http::Response::Json(200, json::object{{"status", "ok"}});
  });
  // Readiness: started, not draining, and the database answers.
  r.Add("GET", "/readyz", kPublic, [&ctx](http::Request&) {
    if (!ctx.ready()) {
      return http::Response::Json(503, json::object{{"status", "not ready"}});
    }
    Status st = ctx.db.Ping();
    if (!st.ok()) {
      return http::Response::Json(503, json::object{{"status", "database unavailable"}});
    }
    return http::Response::Json(
        200, json::object{{"status", "ready"}, {"database", store::BackendName(ctx.db.Backend())}});
  });
  r.Add("GET", "/metrics", kPublic, [&ctx](http::Request&) {
    if (ctx.collect_metrics) ctx.collect_metrics(ctx.metrics);
    return http::Response::Text(200, ctx.metrics.Render(),
                                std::string(http::Metrics::kContentType));
  });
  // The API's OpenAPI 3.1 description (docs/openapi.yaml), as JSON.
  r.Add("GET", "/api/v1/openapi.json", kPublic, [json = OpenApiJson()](http::Request&) {
    return http::Response::Text(200, json, "application/json");
  });
}

}  // namespace gpunex::platform::api
