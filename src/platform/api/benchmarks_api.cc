// /api/v1/machines/{id}/benchmarks: benchmark runs of a machine (BEN-6) and re-runs on
// request.
#include "platform/api/api.h"

namespace gpunex::platform::api {
namespace {

json::array FailuresJson(const std::vector<benchmarks::Failure>& fs) {
  json::array a;
  for (const auto& f : fs) {
    a.push_back(json::object{{"metric", f.metric},
                             {"measured", f.measured},
                             {"required", f.required},
                             {"guidance", f.guidance}});
  }
  return a;
}

json::value ReferenceJson(const std::optional<GpuModel>& m) {
  if (!m) return nullptr;
  return json::object{{"fp32_tflops", m->fp32_tflops},
                      {"fp16_tflops", m->fp16_tflops},
                      {"fp16_tensor_tflops", m->fp16_tensor_tflops},
                      {"bf16_tensor_tflops", m->fp16_tensor_tflops},
                      {"tf32_tensor_tflops", m->tf32_tensor_tflops},
                      {"memory_gbps", m->mem_bw_gbps}};
}

json::object ThresholdsJson(const benchmarks::Thresholds& t, const std::optional<GpuModel>& m) {
  json::object o{{"min_over_median", t.min_over_median},
                 {"max_thermal_throttle_fraction", t.thermal_throttle_fraction}};
  if (m) {
    o["fp32_tflops"] = m->fp32_tflops * t.fp32;
    o["fp16_tflops"] = m->fp16_tflops * t.fp16;
    o["fp16_tensor_tflops"] = m->fp16_tensor_tflops * t.fp16_tensor;
    o["bf16_tensor_tflops"] = m->fp16_tensor_tflops * t.bf16_tensor;
    o["tf32_tensor_tflops"] = m->tf32_tensor_tflops * t.tf32_tensor;
    o["memory_triad_gbps"] = m->mem_bw_gbps * t.memory;
  }
  return o;
}

json::object RunJson(const benchmarks::BenchmarkRun& r) {
  json::array gpus;
  for (const auto& g : r.gpus) {
    gpus.push_back(json::object{
        {"gpu_id", g.gpu_id},
        {"uuid", g.uuid},
        {"index", g.index},
        {"name", g.name},
        {"catalog_id", g.catalog_id},
        {"state", Name(g.state)},
        {"figures", g.figures ? json::value(protocol::ToJson(*g.figures)) : json::value(nullptr)},
        {"performance_score", g.score ? json::value(*g.score) : json::value(nullptr)},
        {"failures", FailuresJson(g.failures)},
        {"error", OptJson(g.error)},
        {"reference", ReferenceJson(g.reference)},
        {"thresholds", ThresholdsJson(g.thresholds, g.reference)}});
  }
  return {{"id", r.id},
          {"reason", Name(r.reason)},
          {"state", Name(r.state)},
          {"requested", r.requested_by.has_value()},
          {"machine_phases", r.machine_phases},
          {"emulated", r.emulated},
          {"network", r.network ? json::value(protocol::ToJson(*r.network)) : json::value(nullptr)},
          {"storage", r.storage ? json::value(protocol::ToJson(*r.storage)) : json::value(nullptr)},
          {"machine_failures", FailuresJson(r.machine_failures)},
          {"error", OptJson(r.error)},
          {"created_at", FormatRfc3339(r.created_at)},
          {"finished_at", TimeJson(r.finished_at)},
          {"gpus", std::move(gpus)}};
}

}  // namespace

void RegisterBenchmarkRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("GET", "/api/v1/machines/{id}/benchmarks", kProviderOrAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto page = ParsePageRequest(req, {50, 100});
    if (!page.ok()) return http::ErrorResponse(page.status());
    auto runs = ctx.benchmarks.List(*p, req.Param("id"), *page);
    if (!runs.ok()) return http::ErrorResponse(runs.status());
    return http::Response::Json(200, PageJson(*runs, RunJson));
  });
  r.Add("POST", "/api/v1/machines/{id}/benchmarks", kProviderOrAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto run = ctx.benchmarks.Request(*p, req.Param("id"));
    if (!run.ok()) return http::ErrorResponse(run.status());
    return http::Response::Json(202, RunJson(*run));
  });
}

}  // namespace gpunex::platform::api
