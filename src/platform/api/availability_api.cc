// /api/v1/machines/{id}/availability, /api/v1/providers/me/availability and
// /api/v1/machines/{id}/maintenance: machine schedules and maintenance windows (PRC-2).
#include "platform/api/api.h"

namespace gpunex::platform::api {
namespace {

using availability::MachineAvailability;
using availability::MaintenanceWindow;

json::object AvailabilityJson(const MachineAvailability& a) {
  json::array upcoming;
  for (const availability::Interval& i : a.upcoming) {
    upcoming.push_back(
        json::object{{"start", FormatRfc3339(i.start)}, {"end", FormatRfc3339(i.end)}});
  }
  return {{"machine_id", a.machine_id},
          {"schedule", ScheduleJson(a.schedule)},
          {"source", Name(a.source)},
          {"updated_at", FormatRfc3339(a.updated_at)},
          {"inside_schedule", a.inside_schedule},
          {"in_maintenance", a.in_maintenance},
          {"next_change_at", TimeJson(a.next_change_at)},
          {"upcoming", std::move(upcoming)}};
}

json::object WindowJson(const MaintenanceWindow& w) {
  return {{"id", w.row.id},
          {"machine_id", w.row.machine_id},
          {"start", FormatRfc3339(w.row.start)},
          {"end", FormatRfc3339(w.row.end)},
          {"category", Name(w.row.category)},
          {"reason", w.row.reason},
          {"declared_at", FormatRfc3339(w.row.declared_at)},
          {"planned", w.planned},
          {"state", Name(w.state)},
          {"cancelled_at", TimeJson(w.row.cancelled_at)}};
}

// {"schedule": ...}: the schedule, or the validation failure naming every bad field.
StatusOr<applications::Availability> DecodeScheduleBody(const http::Request& req) {
  auto body = JsonObjectBody(req);
  if (!body.ok()) return body.status();
  FieldErrors errors;
  JsonReader r(*body, "", &errors);
  r.RejectUnknown({"schedule"});
  std::optional<applications::Availability> s = DecodeSchedule(r, "schedule", true);
  if (errors.empty() && s) return *s;
  FieldErrors domain;
  if (s) applications::ValidateAvailability(*s, "schedule", &domain);
  return MergeFieldErrors(std::move(errors), domain);
}

// An RFC 3339 time under `key`: nullopt when absent (left for the domain to require) or
// malformed (an error here).
std::optional<Timestamp> TimeField(const JsonReader& r, std::string_view key) {
  std::optional<std::string> text = r.String(key, false, 64);
  if (!text) return std::nullopt;
  std::optional<Timestamp> t = ParseRfc3339(*text);
  if (!t) r.Fail(key, "must be an RFC 3339 time such as \"2026-12-01T08:00:00Z\"");
  return t;
}

}  // namespace

void RegisterAvailabilityRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("GET", "/api/v1/machines/{id}/availability", kProviderOrAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto a = ctx.availability.Get(*p, req.Param("id"));
    if (!a.ok()) return http::ErrorResponse(a.status());
    return http::Response::Json(200, AvailabilityJson(*a));
  });
  r.Add("PUT", "/api/v1/machines/{id}/availability", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto schedule = DecodeScheduleBody(req);
    if (!schedule.ok()) return http::ErrorResponse(schedule.status());
    auto a = ctx.availability.SetSchedule(*p, req.Param("id"), std::move(*schedule));
    if (!a.ok()) return http::ErrorResponse(a.status());
    return http::Response::Json(200, AvailabilityJson(*a));
  });
  r.Add("PUT", "/api/v1/providers/me/availability", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (!p->user.HasRole(accounts::kRoleProvider))
      return http::ErrorResponse(PermissionDenied("only providers have machines"));
    auto schedule = DecodeScheduleBody(req);
    if (!schedule.ok()) return http::ErrorResponse(schedule.status());
    auto n = ctx.availability.SetScheduleForAll(*p, std::move(*schedule));
    if (!n.ok()) return http::ErrorResponse(n.status());
    return http::Response::Json(200, json::object{{"updated", *n}});
  });
  r.Add("GET", "/api/v1/machines/{id}/maintenance", kProviderOrAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto page = ParsePageRequest(req, {50, 100});
    if (!page.ok()) return http::ErrorResponse(page.status());
    auto windows = ctx.availability.ListMaintenance(*p, req.Param("id"), *page);
    if (!windows.ok()) return http::ErrorResponse(windows.status());
    return http::Response::Json(200, PageJson(*windows, WindowJson));
  });
  r.Add("POST", "/api/v1/machines/{id}/maintenance", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    FieldErrors errors;
    JsonReader reader(*body, "", &errors);
    reader.RejectUnknown({"start", "end", "category", "reason"});
    availability::DeclareMaintenanceRequest d;
    d.start = TimeField(reader, "start");
    d.end = TimeField(reader, "end");
    d.category = reader.String("category", false, 32).value_or("");
    // Longer than the limit is refused by the domain with its message; far longer here.
    d.reason = reader.String("reason", false, 4 * availability::kMaxReasonLength).value_or("");
    if (!errors.empty()) {
      // With the fields that are missing named too.
      for (std::string_view key : {"start", "end", "category", "reason"}) {
        if (!reader.Has(key) && !errors.count(std::string(key)))
          errors.emplace(std::string(key), "is required");
      }
      return http::ErrorResponse(ValidationFailed(std::move(errors)));
    }
    auto w = ctx.availability.Declare(*p, req.Param("id"), d);
    if (!w.ok()) return http::ErrorResponse(w.status());
    return http::Response::Json(201, WindowJson(*w));
  });
  r.Add("DELETE", "/api/v1/machines/{id}/maintenance/{mid}", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto w = ctx.availability.Cancel(*p, req.Param("id"), req.Param("mid"));
    if (!w.ok()) return http::ErrorResponse(w.status());
    return http::Response::Json(200, WindowJson(*w));
  });
}

}  // namespace gpunex::platform::api
