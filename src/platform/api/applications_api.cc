// /api/v1/provider-applications: the JSON form of an application (docs/api.md, "Provider
// applications"), decoded into applications::ApplicationBody and encoded from
// applications::Application, and the routes.
//
// Decoding checks what the wire form decides: JSON types, unknown members (refused),
// members required at the request's completeness (a draft may leave anything out; with
// "submit": true everything is required), text lengths and numeric ranges. The domain
// checks the values (formats, the catalog, the rules between fields). When decoding finds
// problems, the domain's checks run too on what could be decoded, so that one answer
// names every bad field, as docs/api.md promises.
//
// An absent value is null on the wire (email, country, model_other, region, numbers) or
// "" (the free-text fields full_name, company, city, maintenance_notes), as before.
#include <string_view>

#include "platform/api/api.h"

namespace gpunex::platform::api {
namespace {

using applications::Application;
using applications::ApplicationBody;
using applications::Applications;
using applications::Completeness;

// --- decoding

std::optional<applications::Location> DecodeLocation(const JsonReader& parent, bool required) {
  const json::object* o = parent.Object("location", required);
  if (!o) return std::nullopt;
  JsonReader r(*o, parent.PathOf("location"), parent.errors());
  r.RejectUnknown({"city", "country", "region"});
  applications::Location loc;
  loc.city = r.String("city", required, applications::kMaxCity).value_or("");
  loc.country = r.String("country", required, 2);
  loc.region = r.String("region", false, applications::kMaxRegion).value_or("");
  return loc;
}

// The body of a POST (`submit_allowed`) or PUT; what could not be decoded is left out
// and named in `*errors`.
ApplicationBody DecodeBody(const json::object& o, Completeness completeness, bool submit_allowed,
                           FieldErrors* errors) {
  const bool req = completeness == Completeness::kComplete;
  JsonReader root(o, "", errors);
  root.RejectUnknown({"contact", "gpus", "infrastructure", "submit"});
  if (!submit_allowed && o.contains("submit")) {
    root.Fail("submit", "is only accepted on creation; use the submit endpoint");
  }
  ApplicationBody body;

  if (const json::object* c = root.Object("contact", req)) {
    JsonReader r(*c, "contact", errors);
    r.RejectUnknown({"full_name", "email", "company"});
    body.contact.full_name = r.String("full_name", req, applications::kMaxFullName).value_or("");
    body.contact.email = r.String("email", req, applications::kMaxEmail);
    body.contact.company = r.String("company", false, applications::kMaxCompany).value_or("");
  }

  if (const json::array* gpus =
          root.Array("gpus", req, req ? 1 : 0, applications::kMaxGpuEntries)) {
    for (size_t i = 0; i < gpus->size(); ++i) {
      const std::string path = "gpus[" + std::to_string(i) + "]";
      applications::GpuEntry& g = body.gpus.emplace_back();  // a placeholder when undecodable
      if (!(*gpus)[i].is_object()) {
        errors->emplace(path, "must be an object");
        continue;
      }
      JsonReader r((*gpus)[i].get_object(), path, errors);
      r.RejectUnknown({"model", "model_other", "quantity", "system_ram_gb", "upload_gbps",
                       "download_gbps", "availability", "location"});
      g.model = r.String("model", true, applications::kMaxModelId).value_or("");
      g.model_other = r.String("model_other", false, applications::kMaxModelOther);
      g.quantity = r.Int("quantity", req, 1, applications::kMaxQuantity);
      g.system_ram_gb = r.Int("system_ram_gb", req, 1, applications::kMaxSystemRamGb);
      g.upload_gbps = r.Number("upload_gbps", req, 0, applications::kMaxGbps);
      g.download_gbps = r.Number("download_gbps", req, 0, applications::kMaxGbps);
      g.availability = DecodeSchedule(r, "availability", req);
      g.location = DecodeLocation(r, req);
    }
  }

  if (const json::object* inf = root.Object("infrastructure", req)) {
    JsonReader r(*inf, "infrastructure", errors);
    r.RejectUnknown({"ups", "commitment_months", "maintenance_notes"});
    body.infrastructure.ups = r.Bool("ups", req);
    body.infrastructure.commitment_months = r.Int("commitment_months", req, 0, 12);
    body.infrastructure.maintenance_notes =
        r.String("maintenance_notes", false, applications::kMaxNotes, true).value_or("");
  }
  return body;
}

applications::DecisionRequest DecodeDecision(const json::object& o, FieldErrors* errors) {
  JsonReader r(o, "", errors);
  r.RejectUnknown({"decision", "tier", "message", "override_suggestion"});
  applications::DecisionRequest d;
  d.decision = r.String("decision", true, 32).value_or("");
  d.tier = r.String("tier", false, 32);
  d.message = r.String("message", false, Applications::kMaxMessage, true);
  d.override_suggestion = r.Bool("override_suggestion", false).value_or(false);
  return d;
}

// The optional body of a submission: {"reply": "..."}; no body is no reply.
applications::SubmitRequest DecodeSubmit(const json::object& o, FieldErrors* errors) {
  JsonReader r(o, "", errors);
  r.RejectUnknown({"reply"});
  return {r.String("reply", false, Applications::kMaxMessage, true)};
}

// The list's query: limit, cursor and mine decoded here (each bad one named); status, q
// and sort are passed on for the domain to check.
StatusOr<applications::ListApplicationsRequest> ParseListRequest(const http::Request& req) {
  applications::ListApplicationsRequest out;
  FieldErrors errors;
  auto page = ParsePageRequest(req, Applications::kPageLimits);
  if (page.ok()) {
    out.page = *page;
  } else {
    errors.merge(FieldErrors(page.status().fields()));
  }
  out.status = req.Query("status");
  if (const std::string mine = req.Query("mine"); mine == "true") {
    out.mine = true;
  } else if (!mine.empty() && mine != "false") {
    errors.emplace("mine", "must be true or false");
  }
  out.query = req.Query("q");
  out.sort = req.Query("sort");
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return out;
}

// The answer for a body that did not decode: every bad field.
http::Response BodyErrors(const ApiContext& ctx, const ApplicationBody& partial,
                          Completeness completeness, FieldErrors errors) {
  auto domain = ctx.applications.Check(partial, completeness);
  return http::ErrorResponse(
      MergeFieldErrors(std::move(errors), domain.ok() ? *domain : FieldErrors{}));
}

// --- encoding

json::value OptInt(const std::optional<int64_t>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}
json::value OptDouble(const std::optional<double>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}
json::value OptBool(const std::optional<bool>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::object BodyJson(const ApplicationBody& body) {
  json::object contact{{"full_name", body.contact.full_name},
                       {"email", OptJson(body.contact.email)},
                       {"company", body.contact.company}};
  json::array gpus;
  for (const applications::GpuEntry& g : body.gpus) {
    json::object o;
    o["model"] = g.model;
    o["model_other"] = OptJson(g.model_other);
    o["quantity"] = OptInt(g.quantity);
    o["system_ram_gb"] = OptInt(g.system_ram_gb);
    o["upload_gbps"] = OptDouble(g.upload_gbps);
    o["download_gbps"] = OptDouble(g.download_gbps);
    o["availability"] =
        g.availability ? json::value(ScheduleJson(*g.availability)) : json::value(nullptr);
    if (g.location) {
      o["location"] =
          json::object{{"city", g.location->city},
                       {"country", OptJson(g.location->country)},
                       {"region", g.location->region.empty() ? json::value(nullptr)
                                                             : json::value(g.location->region)}};
    } else {
      o["location"] = nullptr;
    }
    gpus.push_back(std::move(o));
  }
  json::object inf{{"ups", OptBool(body.infrastructure.ups)},
                   {"commitment_months", OptInt(body.infrastructure.commitment_months)},
                   {"maintenance_notes", body.infrastructure.maintenance_notes}};
  return {{"contact", std::move(contact)},
          {"gpus", std::move(gpus)},
          {"infrastructure", std::move(inf)}};
}

json::object ApplicationJson(const Application& a) {
  json::object out = BodyJson(a.body);
  out["id"] = a.id;
  out["user_id"] = a.user_id;
  out["status"] = Name(a.status);
  out["suggested_tier"] = Name(a.suggested_tier);
  json::array reasons;
  for (const std::string& r : a.suggested_tier_reasons) reasons.emplace_back(r);
  out["suggested_tier_reasons"] = std::move(reasons);
  out["tier"] = OptJson(a.tier);
  out["created_at"] = FormatRfc3339(a.created_at);
  out["updated_at"] = FormatRfc3339(a.updated_at);
  out["submitted_at"] = TimeJson(a.submitted_at);
  out["resubmitted_at"] = TimeJson(a.resubmitted_at);
  out["decided_at"] = TimeJson(a.decided_at);
  out["decided_by"] = OptJson(a.decided_by);
  out["age_business_days"] =
      a.age_business_days ? json::value(*a.age_business_days) : json::value(nullptr);
  out["overdue"] = a.overdue;
  out["total_gpus"] = a.total_gpus;
  out["has_unlisted_models"] = a.has_unlisted_models;
  if (a.history) {
    json::array history;
    for (const applications::ApplicationEvent& e : *a.history) {
      json::object entry{{"at", FormatRfc3339(e.at)},
                         {"actor_id", e.actor_id},
                         {"action", Name(e.action)},
                         // "" for created.
                         {"from_status", e.from_status ? Name(*e.from_status) : ""},
                         {"to_status", Name(e.to_status)},
                         {"actor_name", OptJson(e.actor_name)},
                         {"message", OptJson(e.message)},
                         {"tier", OptJson(e.tier)},
                         {"overridden_suggestion", OptJson(e.overridden_suggestion)}};
      if (e.changes) {
        json::array changes;
        for (const applications::FieldChange& c : e.changes->changes) {
          changes.push_back(
              json::object{{"field", c.field}, {"from", OptJson(c.from)}, {"to", OptJson(c.to)}});
        }
        entry["changes"] = std::move(changes);
        entry["changes_omitted"] = static_cast<int64_t>(e.changes->omitted);
      } else {
        entry["changes"] = nullptr;
        entry["changes_omitted"] = 0;
      }
      history.push_back(std::move(entry));
    }
    out["history"] = std::move(history);
  }
  return out;
}

http::Response Answer(int status, const StatusOr<Application>& a) {
  if (!a.ok()) return http::ErrorResponse(a.status());
  return http::Response::Json(status, ApplicationJson(*a));
}

}  // namespace

void RegisterApplicationRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("POST", "/api/v1/provider-applications", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto obj = JsonObjectBody(req);
    if (!obj.ok()) return http::ErrorResponse(obj.status());
    FieldErrors errors;
    bool submit = false;
    if (auto it = obj->find("submit"); it != obj->end()) {
      if (it->value().is_bool()) {
        submit = it->value().get_bool();
      } else {
        errors.emplace("submit", "must be true or false");
      }
    }
    const Completeness completeness = submit ? Completeness::kComplete : Completeness::kDraft;
    ApplicationBody body = DecodeBody(*obj, completeness, true, &errors);
    if (!errors.empty()) return BodyErrors(ctx, body, completeness, std::move(errors));
    return Answer(201, ctx.applications.Create(*p, {std::move(body), submit}));
  });

  r.Add("GET", "/api/v1/provider-applications", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto query = ParseListRequest(req);
    if (!query.ok()) return http::ErrorResponse(query.status());
    auto list = ctx.applications.List(*p, *query);
    if (!list.ok()) return http::ErrorResponse(list.status());
    json::object out = PageJson<Application>(*list, ApplicationJson);
    out["total"] = list->total;
    return http::Response::Json(200, out);
  });

  r.Add("GET", "/api/v1/provider-applications/{id}", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return Answer(200, ctx.applications.Get(*p, req.Param("id")));
  });

  r.Add("PUT", "/api/v1/provider-applications/{id}", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto obj = JsonObjectBody(req);
    if (!obj.ok()) return http::ErrorResponse(obj.status());
    FieldErrors errors;
    ApplicationBody body = DecodeBody(*obj, Completeness::kDraft, false, &errors);
    if (!errors.empty()) return BodyErrors(ctx, body, Completeness::kDraft, std::move(errors));
    return Answer(200, ctx.applications.Update(*p, req.Param("id"), body));
  });

  r.Add("POST", "/api/v1/provider-applications/{id}/submit", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    applications::SubmitRequest submit;
    if (!req.body.empty()) {
      auto obj = JsonObjectBody(req);
      if (!obj.ok()) return http::ErrorResponse(obj.status());
      FieldErrors errors;
      submit = DecodeSubmit(*obj, &errors);
      if (!errors.empty()) return http::ErrorResponse(ValidationFailed(std::move(errors)));
    }
    return Answer(200, ctx.applications.Submit(*p, req.Param("id"), submit));
  });

  r.Add("POST", "/api/v1/provider-applications/{id}/decision", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto obj = JsonObjectBody(req);
    if (!obj.ok()) return http::ErrorResponse(obj.status());
    FieldErrors errors;
    applications::DecisionRequest decision = DecodeDecision(*obj, &errors);
    if (!errors.empty()) {
      return http::ErrorResponse(
          MergeFieldErrors(std::move(errors), applications::ValidateDecision(decision)));
    }
    return Answer(200, ctx.applications.Decide(*p, req.Param("id"), decision));
  });
}

}  // namespace gpunex::platform::api
