// /api/v1/rentals/{id}/access-tokens: tokens that open a rental's private HTTP ports
// (docs/access.md).
#include "platform/access/access.h"
#include "platform/access/access_module.h"
#include "platform/api/api.h"
#include "platform/rentals/rentals.h"

namespace gpunex::platform::access {

namespace {

json::object TokenJson(const AccessToken& t) {
  return {{"id", t.id},
          {"rental_id", t.rental_id},
          {"created_at", FormatRfc3339(t.created_at)},
          {"expires_at", FormatRfc3339(t.expires_at)},
          {"revoked_at", t.revoked_at ? json::value(FormatRfc3339(*t.revoked_at)) : nullptr}};
}

// The caller's own rental: only its customer holds its tokens (not the provider, not an
// admin, who would otherwise reach into a customer's container).
StatusOr<rentals::Rental> OwnRental(http::Request& req, const api::ApiContext& ctx,
                                    accounts::Principal* who) {
  GPUNEX_ASSIGN_OR_RETURN(*who, api::RequireUser(req, ctx));
  GPUNEX_ASSIGN_OR_RETURN(rentals::Rental r, ctx.rentals.Get(*who, req.Param("id")));
  if (r.customer_id != who->user.id) return NotFound("no such rental");
  return r;
}

}  // namespace

void RegisterRoutes(http::Router& r, const api::ApiContext& ctx) {
  Access& access = ctx.services.Get<Access>();

  r.Add("POST", "/api/v1/rentals/{id}/access-tokens", api::kUser,
        [&ctx, &access](http::Request& req) {
          accounts::Principal p;
          auto rental = OwnRental(req, ctx, &p);
          if (!rental.ok()) return http::ErrorResponse(rental.status());
          // Nothing of an ended rental opens again (docs/access.md).
          if (rentals::HasEnded(*rental)) {
            return http::ProtocolErrorResponse(410, "gone", "the rental has ended");
          }
          json::object empty;
          auto body = req.body.empty() ? StatusOr<json::object>(empty) : api::JsonObjectBody(req);
          if (!body.ok()) return http::ErrorResponse(body.status());
          FieldErrors errors;
          JsonReader in(*body, "", &errors);
          in.RejectUnknown({"ttl_s"});
          std::optional<int64_t> ttl =
              in.Int("ttl_s", false, 60, access.options().max_token_ttl.count());
          if (!errors.empty()) return http::ErrorResponse(ValidationFailed(std::move(errors)));
          auto made = access.CreateToken(
              *rental, ttl ? std::optional<std::chrono::seconds>(*ttl) : std::nullopt);
          if (!made.ok()) return http::ErrorResponse(made.status());
          json::object out = TokenJson(made->token);
          out["token"] = made->secret;
          // Links that open each HTTP port with it (the token becomes a cookie there).
          json::array links;
          for (const auto& port : rental->ports) {
            if (port.protocol != protocol::PortProtocol::kHttp) continue;
            if (auto urls = access.UrlsOf(rental->id, port.port)) {
              const std::string q = "?" + std::string(kTokenParam) + "=" + made->secret;
              links.push_back(json::object{{"port", port.port},
                                           {"url", urls->host_url + q},
                                           {"path_url", urls->path_url + q}});
            }
          }
          out["links"] = std::move(links);
          http::Response resp = http::Response::Json(201, out);
          resp.SetHeader("Cache-Control", "no-store");
          return resp;
        });

  r.Add("GET", "/api/v1/rentals/{id}/access-tokens", api::kUser,
        [&ctx, &access](http::Request& req) {
          accounts::Principal p;
          auto rental = OwnRental(req, ctx, &p);
          if (!rental.ok()) return http::ErrorResponse(rental.status());
          auto list = access.ListTokens(rental->id);
          if (!list.ok()) return http::ErrorResponse(list.status());
          json::array items;
          for (const AccessToken& t : *list) items.push_back(TokenJson(t));
          return http::Response::Json(
              200, json::object{{"items", std::move(items)}, {"next_cursor", nullptr}});
        });

  r.Add("DELETE", "/api/v1/rentals/{id}/access-tokens/{token_id}", api::kUser,
        [&ctx, &access](http::Request& req) {
          accounts::Principal p;
          auto rental = OwnRental(req, ctx, &p);
          if (!rental.ok()) return http::ErrorResponse(rental.status());
          Status st = access.RevokeToken(rental->id, req.Param("token_id"));
          if (!st.ok()) return http::ErrorResponse(st);
          return http::Response::NoContent();
        });
}

}  // namespace gpunex::platform::access
