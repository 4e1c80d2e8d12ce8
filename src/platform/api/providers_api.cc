// /api/v1/providers/me and its agent tokens
#include "platform/accounts/directory.h"
#include "platform/api/api.h"

namespace gpunex::platform::api {
namespace {

json::object ProviderJson(const providers::Provider& p) {
  return {{"user_id", p.user_id},
          {"tier", providers::Name(p.tier)},
          {"status", Name(p.status)},
          {"application_id", p.application_id},
          {"approved_at", FormatRfc3339(p.approved_at)}};
}

json::object TokenJson(const providers::AgentToken& t) {
  return {{"id", t.id},
          {"name", t.name},
          {"prefix", t.prefix},
          {"created_at", FormatRfc3339(t.created_at)},
          {"last_used_at", TimeJson(t.last_used_at)},
          {"revoked_at", TimeJson(t.revoked_at)},
          {"replaced_by", OptJson(t.replaced_by)},
          {"active", !t.revoked_at.has_value()}};
}

http::Response TokenCreated(const ApiContext& ctx, const StatusOr<providers::NewAgentToken>& t) {
  if (!t.ok()) return http::ErrorResponse(t.status());
  json::object o = TokenJson(t->token);
  o["token"] = t->secret;  // shown once
  o["install_command"] = providers::InstallCommand(ctx.config.public_url, t->secret);
  return http::Response::Json(201, o);
}

// {name?}: an empty body names the token "agent".
StatusOr<std::string> DecodeTokenName(const http::Request& req) {
  if (req.body.empty()) return std::string();
  GPUNEX_ASSIGN_OR_RETURN(json::object body, JsonObjectBody(req));
  FieldErrors errors;
  JsonReader r(body, "", &errors);
  r.RejectUnknown({"name"});
  auto name = r.String("name", false, providers::kMaxTokenName);
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return name.value_or("");
}

}  // namespace

void RegisterProviderRoutes(http::Router& r, const ApiContext& ctx) {
  // The operators' list of providers: each with who they are, their commission and what
  // they run (the fleet's counts), oldest approval first.
  r.Add("GET", "/api/v1/admin/providers", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (!p->IsAdmin())
      return http::ErrorResponse(PermissionDenied("only operators list providers"));
    auto page = ParsePageRequest(req, {50, 200});
    if (!page.ok()) return http::ErrorResponse(page.status());
    Page<providers::Provider> found;
    std::map<std::string, accounts::UserSummary> users;
    std::map<std::string, fleet::MachineCounts> counts;
    Status read = ctx.db.Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(found, providers::ListProviders(tx, *page));
      std::vector<std::string> ids;
      for (const providers::Provider& prov : found.items) ids.push_back(prov.user_id);
      GPUNEX_ASSIGN_OR_RETURN(users, accounts::UserSummaries(tx, ids));
      GPUNEX_ASSIGN_OR_RETURN(counts, fleet::MachineCountsOf(tx, ids));
      return Status::Ok();
    });
    if (!read.ok()) return http::ErrorResponse(read);
    json::array items;
    for (const providers::Provider& prov : found.items) {
      json::object o = ProviderJson(prov);
      const auto user = users.find(prov.user_id);
      o["email"] = user != users.end() ? user->second.email : "";
      o["name"] = user != users.end() ? user->second.name : "";
      o["commission_bps"] = ctx.rentals.CommissionBps(prov.tier);
      const auto c = counts.find(prov.user_id);
      const fleet::MachineCounts n = c != counts.end() ? c->second : fleet::MachineCounts{};
      o["machines"] = n.machines;
      o["machines_online"] = n.online;
      o["gpus"] = n.gpus;
      items.push_back(std::move(o));
    }
    return http::Response::Json(
        200, json::object{{"items", std::move(items)},
                          {"next_cursor",
                           found.next ? json::value(found.next->Encode()) : json::value(nullptr)}});
  });

  r.Add("GET", "/api/v1/providers/me", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto prov = ctx.providers.Get(*p);
    if (!prov.ok()) return http::ErrorResponse(prov.status());
    json::object out = ProviderJson(*prov);
    out["commission_bps"] = ctx.rentals.CommissionBps(prov->tier);  // LED-4, disclosed
    return http::Response::Json(200, out);
  });

  r.Add("POST", "/api/v1/providers/me/agent-tokens", kProviderSession, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto name = DecodeTokenName(req);
    if (!name.ok()) return http::ErrorResponse(name.status());
    return TokenCreated(ctx, ctx.providers.CreateToken(*p, *name));
  });

  r.Add("GET", "/api/v1/providers/me/agent-tokens", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto tokens = ctx.providers.ListTokens(*p);
    if (!tokens.ok()) return http::ErrorResponse(tokens.status());
    json::array items;
    for (const auto& t : *tokens) items.push_back(TokenJson(t));
    return http::Response::Json(
        200, json::object{{"items", std::move(items)}, {"next_cursor", nullptr}});
  });

  r.Add("DELETE", "/api/v1/providers/me/agent-tokens/{id}", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    Status st = ctx.providers.RevokeToken(*p, req.Param("id"));
    if (!st.ok()) return http::ErrorResponse(st);
    ctx.fleet.CloseSessionsForToken(req.Param("id"));
    return http::Response::NoContent();
  });

  r.Add("POST", "/api/v1/providers/me/agent-tokens/{id}/rotate", kProviderSession,
        [&ctx](http::Request& req) {
          auto p = RequireUser(req, ctx);
          if (!p.ok()) return http::ErrorResponse(p.status());
          auto rotated = ctx.providers.RotateToken(*p, req.Param("id"));
          if (rotated.ok()) ctx.fleet.CloseSessionsForToken(req.Param("id"));
          return TokenCreated(ctx, rotated);
        });
}

}  // namespace gpunex::platform::api
