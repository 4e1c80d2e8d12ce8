// /api/v1/machines
#include "platform/accounts/directory.h"
#include "platform/api/api.h"

namespace gpunex::platform::api {
namespace {

json::object GpuInfoJson(const fleet::GpuInfo& g) {
  return {{"driver_version", g.driver_version}, {"cuda_driver_version", g.cuda_driver_version},
          {"pcie_gen_max", g.pcie_gen_max},     {"pcie_gen_current", g.pcie_gen_current},
          {"pcie_width_max", g.pcie_width_max}, {"pcie_width_current", g.pcie_width_current},
          {"power_limit_w", g.power_limit_w}};
}

json::value TelemetryJson(const std::optional<protocol::GpuSample>& t) {
  if (!t) return nullptr;
  json::array reasons;
  for (const auto& r : t->throttle_reasons) reasons.emplace_back(r);
  return json::object{
      {"utilization_pct", t->utilization_pct}, {"memory_used_mb", t->memory_used_mb},
      {"temperature_c", t->temperature_c},     {"power_w", t->power_w},
      {"sm_clock_mhz", t->sm_clock_mhz},       {"throttle_reasons", std::move(reasons)}};
}

// A GPU as docs/api.md has it, with its listing: `listed` says whether it is on the
// marketplace (listed, rented or being benchmarked), `delisted_reason` why not (null when
// it is), `listing_state` the code the dashboard switches on.
json::object GpuJson(const fleet::MachineGpu& g, const benchmarks::GpuScore& score) {
  const bool on_market = g.listing.on_marketplace();
  return {
      {"id", g.id},
      {"index", g.index},
      {"uuid", g.uuid},
      {"name", g.name},
      {"catalog_id", g.catalog_id},
      {"vram_mb", g.vram_mb},
      {"emulated", g.emulated},
      {"enabled", g.enabled},
      {"present", g.present},
      {"listed", on_market},
      {"listing_state", listing::ListingStateCode(g.listing.state)},
      {"listing_note", g.listing.note.empty() ? json::value(nullptr) : json::value(g.listing.note)},
      {"listed_since", FormatRfc3339(g.listing_since)},
      {"delisted_reason", on_market ? json::value(nullptr) : json::value(g.listing.note)},
      {"performance_score",
       score.performance_score ? json::value(*score.performance_score) : json::value(nullptr)},
      {"last_benchmark_at", TimeJson(score.last_benchmark_at)},
      {"info", GpuInfoJson(g.info)},
      {"telemetry", TelemetryJson(g.telemetry)},
      {"telemetry_at", TimeJson(g.telemetry_at)}};
}

StatusOr<json::object> MachineJson(const ApiContext& ctx, const fleet::Machine& m) {
  GPUNEX_ASSIGN_OR_RETURN(auto scores, ctx.benchmarks.Scores(m.id));
  json::array gpus;
  for (const auto& g : m.gpus) gpus.push_back(GpuJson(g, scores[g.id]));
  return json::object{{"id", m.id},
                      {"provider_id", m.provider_id},
                      {"name", m.name},
                      {"status", Name(m.status)},
                      {"emulated", m.emulated},
                      {"agent_version", m.agent_version},
                      {"host", protocol::ToJson(m.host)},
                      {"created_at", FormatRfc3339(m.created_at)},
                      {"last_seen", FormatRfc3339(m.last_seen)},
                      {"status_since", FormatRfc3339(m.status_since)},
                      {"gpus", std::move(gpus)}};
}

http::Response DetailResponse(const ApiContext& ctx, const StatusOr<fleet::MachineDetail>& d) {
  if (!d.ok()) return http::ErrorResponse(d.status());
  auto out = MachineJson(ctx, d->machine);
  if (!out.ok()) return http::ErrorResponse(out.status());
  json::array intervals;
  for (const auto& iv : d->recent_intervals) {
    intervals.push_back(json::object{{"state", Name(iv.state)},
                                     {"started_at", FormatRfc3339(iv.started_at)},
                                     {"ended_at", TimeJson(iv.ended_at)},
                                     {"end_reason", OptJson(iv.end_reason)}});
  }
  (*out)["recent_intervals"] = std::move(intervals);
  (*out)["connected_here"] = d->connected_here;
  return http::Response::Json(200, *out);
}

}  // namespace

void RegisterMachineRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("GET", "/api/v1/machines", kProviderOrAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto page = ParsePageRequest(req, {50, 500});
    if (!page.ok()) return http::ErrorResponse(page.status());
    std::optional<fleet::MachineStatus> status;
    if (const std::string s = req.Query("status"); !s.empty()) {
      status = fleet::kMachineStatusNames.Parse(s);
      if (!status) return http::ErrorResponse(FieldError("status", "must be online or offline"));
    }
    auto machines = ctx.fleet.ListMachines(*p, *page, req.Query("provider_id"), status);
    if (!machines.ok()) return http::ErrorResponse(machines.status());
    // Each machine's provider by name, read once for the page (the admins' list shows it).
    std::map<std::string, std::string> names;
    Status read = ctx.db.Read([&](store::Tx& tx) -> Status {
      std::vector<std::string> ids;
      for (const auto& m : machines->items) ids.push_back(m.provider_id);
      GPUNEX_ASSIGN_OR_RETURN(names, accounts::UserNames(tx, ids));
      return Status::Ok();
    });
    if (!read.ok()) return http::ErrorResponse(read);
    json::array items;
    for (const auto& m : machines->items) {
      auto j = MachineJson(ctx, m);
      if (!j.ok()) return http::ErrorResponse(j.status());
      const auto name = names.find(m.provider_id);
      (*j)["provider_name"] = name != names.end() ? name->second : "";
      items.push_back(std::move(*j));
    }
    return http::Response::Json(
        200, json::object{{"items", std::move(items)},
                          {"next_cursor", machines->next ? json::value(machines->next->Encode())
                                                         : json::value(nullptr)}});
  });
  r.Add("GET", "/api/v1/machines/{id}", kProviderOrAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return DetailResponse(ctx, ctx.fleet.GetMachine(*p, req.Param("id")));
  });
  // {name}: the provider's name for the machine (Fleet::RenameMachine: it stays across the
  // agent's reconnects).
  r.Add("PATCH", "/api/v1/machines/{id}", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    FieldErrors errors;
    JsonReader reader(*body, "", &errors);
    reader.RejectUnknown({"name"});
    auto name = reader.String("name", true, fleet::kMaxMachineName);
    if (!errors.empty()) return http::ErrorResponse(ValidationFailed(std::move(errors)));
    return DetailResponse(ctx, ctx.fleet.RenameMachine(*p, req.Param("id"), *name));
  });
  r.Add("PATCH", "/api/v1/machines/{id}/gpus/{gpu_id}", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    FieldErrors errors;
    JsonReader reader(*body, "", &errors);
    reader.RejectUnknown({"enabled"});
    auto enabled = reader.Bool("enabled", true);
    if (!errors.empty()) return http::ErrorResponse(ValidationFailed(std::move(errors)));
    return DetailResponse(
        ctx, ctx.fleet.SetGpuEnabled(*p, req.Param("id"), req.Param("gpu_id"), *enabled));
  });
}

}  // namespace gpunex::platform::api
