// /api/v1/machines/{id}/reliability and /api/v1/providers/me/reliability: the reliability
// score with its components, figures, events and history (REL-1..4).
#include "platform/api/api.h"

namespace gpunex::platform::api {
namespace {

using reliability::ReliabilityView;

json::value OptNumber(const std::optional<double>& v) {
  return v ? json::value(std::round(*v * 10000) / 10000) : json::value(nullptr);  // 4 places
}

json::object ComponentsJson(const reliability::Components& c) {
  return {{"uptime", c.uptime}, {"completion", c.completion}, {"benchmark", c.benchmark}};
}

std::string DayText(int64_t day) {
  return FormatRfc3339(FromUnixMicros(day * 24 * 3600 * int64_t{1'000'000})).substr(0, 10);
}

json::object ViewJson(const ReliabilityView& v) {
  json::array events;
  for (const reliability::ReliabilityEvent& e : v.events.items) {
    events.push_back(json::object{
        {"at", FormatRfc3339(e.at)},
        {"kind", Name(e.kind)},
        {"description", e.description},
        {"duration_s", e.duration_s ? json::value(*e.duration_s) : json::value(nullptr)},
        {"weight", e.weight},
        {"impact", e.impact},
        {"machine_id", e.machine_id},
        {"gpu_id", OptJson(e.gpu_id)}});
  }
  json::array history;
  for (const reliability::DayScore& d : v.history) {
    history.push_back(json::object{
        {"day", DayText(d.day)}, {"score", d.score}, {"status", d.is_new ? "new" : "scored"}});
  }
  json::array advice;
  for (const std::string& a : v.advice) advice.emplace_back(a);
  json::object o{{"score", v.score},
                 {"status", v.is_new ? "new" : "scored"},
                 {"components", ComponentsJson(v.components)},
                 {"uptime_24h", OptNumber(v.uptime_24h)},
                 {"uptime_7d", OptNumber(v.uptime_7d)},
                 {"uptime_30d", OptNumber(v.uptime_30d)},
                 {"scheduled_hours", v.scheduled_hours},
                 {"outages", json::object{{"count", v.outages}, {"total_s", v.outage_s}}},
                 {"threshold", v.threshold},
                 {"computed_at", FormatRfc3339(v.computed_at)},
                 {"events", std::move(events)},
                 {"events_next_cursor",
                  v.events.next ? json::value(v.events.next->Encode()) : json::value(nullptr)},
                 {"history", std::move(history)},
                 {"advice", std::move(advice)}};
  if (!v.machine_id.empty()) {
    o["machine_id"] = v.machine_id;
  } else {
    json::array machines;
    for (const reliability::MachineLine& m : v.machines) {
      machines.push_back(json::object{{"machine_id", m.machine_id},
                                      {"name", m.name},
                                      {"gpus", m.gpus},
                                      {"score", m.score},
                                      {"status", m.is_new ? "new" : "scored"},
                                      {"components", ComponentsJson(m.components)},
                                      {"uptime_30d", OptNumber(m.uptime_30d)}});
    }
    o["machines"] = std::move(machines);
  }
  return o;
}

}  // namespace

void RegisterReliabilityRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("GET", "/api/v1/machines/{id}/reliability", kProviderOrAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto page = ParsePageRequest(req, {50, 200});
    if (!page.ok()) return http::ErrorResponse(page.status());
    auto v = ctx.reliability.ForMachine(*p, req.Param("id"), *page);
    if (!v.ok()) return http::ErrorResponse(v.status());
    return http::Response::Json(200, ViewJson(*v));
  });
  r.Add("GET", "/api/v1/providers/me/reliability", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto page = ParsePageRequest(req, {50, 200});
    if (!page.ok()) return http::ErrorResponse(page.status());
    auto v = ctx.reliability.ForProvider(*p, *page);
    if (!v.ok()) return http::ErrorResponse(v.status());
    return http::Response::Json(200, ViewJson(*v));
  });
}

}  // namespace gpunex::platform::api
