// /api/v1/gpu-models
#include <limits>

#include "platform/api/api.h"
#include "platform/catalog/catalog.h"

namespace gpunex::platform::api {
namespace {

json::object ModelJson(const catalog::CatalogModel& c) {
  const GpuModel& m = c.model;
  return {{"id", m.id},
          {"name", m.nvml_name},
          {"vram_gb", m.vram_gb},
          {"fp32_tflops", m.fp32_tflops},
          {"fp16_tflops", m.fp16_tflops},
          {"fp16_tensor_tflops", m.fp16_tensor_tflops},
          {"bf16_tensor_tflops", m.fp16_tensor_tflops},
          {"tf32_tensor_tflops", m.tf32_tensor_tflops},
          {"mem_bw_gbps", m.mem_bw_gbps},
          {"default_price_micro", m.default_price.micros()},
          {"source", c.source}};
}

StatusOr<GpuModel> DecodeModel(const json::object& body) {
  FieldErrors errors;
  JsonReader r(body, "", &errors);
  r.RejectUnknown({"id", "name", "vram_gb", "fp32_tflops", "fp16_tflops", "fp16_tensor_tflops",
                   "tf32_tensor_tflops", "mem_bw_gbps", "default_price_micro"});
  constexpr double kAny = std::numeric_limits<double>::max();
  GpuModel m;
  m.id = r.String("id", true, 64).value_or("");
  m.nvml_name = r.String("name", true, 100).value_or("");
  m.vram_gb = static_cast<int>(
      r.Int("vram_gb", true, std::numeric_limits<int>::min(), std::numeric_limits<int>::max())
          .value_or(0));
  m.fp32_tflops = r.Number("fp32_tflops", true, -kAny, kAny).value_or(0);
  m.fp16_tflops = r.Number("fp16_tflops", true, -kAny, kAny).value_or(0);
  m.fp16_tensor_tflops = r.Number("fp16_tensor_tflops", true, -kAny, kAny).value_or(0);
  m.tf32_tensor_tflops = r.Number("tf32_tensor_tflops", true, -kAny, kAny).value_or(0);
  m.mem_bw_gbps = r.Number("mem_bw_gbps", true, -kAny, kAny).value_or(0);
  m.default_price =
      Usdc::Micros(r.Int("default_price_micro", true, std::numeric_limits<int64_t>::min(),
                         std::numeric_limits<int64_t>::max())
                       .value_or(0));
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return m;
}

}  // namespace

void RegisterCatalogRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("GET", "/api/v1/gpu-models", kPublic, [&ctx](http::Request&) {
    auto models = catalog::ListModels(ctx.db);
    if (!models.ok()) return http::ErrorResponse(models.status());
    json::array items;
    for (const auto& m : *models) items.push_back(ModelJson(m));
    return http::Response::Json(200, json::object{{"items", std::move(items)}});
  });
  r.Add("POST", "/api/v1/gpu-models", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (!p->IsAdmin())
      return http::ErrorResponse(PermissionDenied("only admins can add GPU models"));
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    auto model = DecodeModel(*body);
    if (!model.ok()) return http::ErrorResponse(model.status());
    auto added = catalog::AddModel(ctx.db, *p, *model, ctx.clock);
    if (!added.ok()) return http::ErrorResponse(added.status());
    return http::Response::Json(201, ModelJson(*added));
  });
}

}  // namespace gpunex::platform::api
