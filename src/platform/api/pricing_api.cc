// /api/v1/providers/me/prices, /api/v1/providers/me/prices/history and
// /api/v1/machines/{id}/prices: hourly prices per GPU model and machine overrides (PRC-1).
#include "platform/api/api.h"

namespace gpunex::platform::api {
namespace {

json::object PriceJson(const pricing::Price& p) {
  return {{"gpu_model", p.gpu_model},
          {"price_micro", p.price.micros()},
          {"price_usdc", p.price.ToString()},
          {"updated_at", FormatRfc3339(p.updated_at)}};
}

json::object PricesJson(const std::vector<pricing::Price>& prices) {
  json::array items;
  for (const auto& p : prices) items.push_back(PriceJson(p));
  return {{"items", std::move(items)}};
}

json::object MachinePricesJson(const pricing::MachinePrices& m) {
  json::array overrides;
  for (const auto& p : m.overrides) overrides.push_back(PriceJson(p));
  json::array effective;
  for (const auto& [model, price] : m.effective) {
    effective.push_back(json::object{{"gpu_model", model}, {"price_micro", price.micros()}});
  }
  return {{"machine_id", m.machine_id},
          {"items", std::move(overrides)},
          {"effective", std::move(effective)}};
}

json::value OptMicros(const std::optional<Usdc>& u) {
  return u ? json::value(u->micros()) : json::value(nullptr);
}

json::object ChangeJson(const pricing::PriceChange& c) {
  return {{"id", c.id},
          {"machine_id", OptJson(c.machine_id)},
          {"gpu_model", c.gpu_model},
          {"old_price_micro", OptMicros(c.old_price)},
          {"new_price_micro", OptMicros(c.new_price)},
          {"changed_by", c.changed_by},
          {"at", FormatRfc3339(c.at)}};
}

// {"items": [{"gpu_model", "price_micro"}]}: every item, or the validation failure naming
// every field that could not be decoded.
StatusOr<std::vector<pricing::PriceItem>> DecodePrices(const http::Request& req) {
  auto body = JsonObjectBody(req);
  if (!body.ok()) return body.status();
  FieldErrors errors;
  JsonReader r(*body, "", &errors);
  r.RejectUnknown({"items"});
  std::vector<pricing::PriceItem> items;
  if (const json::array* a = r.Array("items", true, 0, pricing::kMaxItems)) {
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string path = "items[" + std::to_string(i) + "]";
      if (!(*a)[i].is_object()) {
        errors[path] = "must be an object {gpu_model, price_micro}";
        continue;
      }
      JsonReader item((*a)[i].as_object(), path, &errors);
      item.RejectUnknown({"gpu_model", "price_micro"});
      pricing::PriceItem p;
      p.gpu_model = item.String("gpu_model", true, 64).value_or("");
      // Any integer decodes; the bounds are the domain's, with its message.
      p.price = Usdc::Micros(item.Int("price_micro", true, INT64_MIN, INT64_MAX).value_or(1));
      items.push_back(std::move(p));
    }
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return items;
}

}  // namespace

void RegisterPricingRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("GET", "/api/v1/providers/me/prices", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto prices = ctx.pricing.ProviderPrices(*p);
    if (!prices.ok()) return http::ErrorResponse(prices.status());
    return http::Response::Json(200, PricesJson(*prices));
  });
  r.Add("PUT", "/api/v1/providers/me/prices", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (!p->user.HasRole(accounts::kRoleProvider))
      return http::ErrorResponse(PermissionDenied("only providers set prices"));
    auto items = DecodePrices(req);
    if (!items.ok()) return http::ErrorResponse(items.status());
    auto prices = ctx.pricing.SetProviderPrices(*p, *items);
    if (!prices.ok()) return http::ErrorResponse(prices.status());
    return http::Response::Json(200, PricesJson(*prices));
  });
  r.Add("GET", "/api/v1/providers/me/prices/history", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto page = ParsePageRequest(req, {50, 200});
    if (!page.ok()) return http::ErrorResponse(page.status());
    auto changes = ctx.pricing.History(*p, *page);
    if (!changes.ok()) return http::ErrorResponse(changes.status());
    return http::Response::Json(200, PageJson(*changes, ChangeJson));
  });
  r.Add("GET", "/api/v1/machines/{id}/prices", kProviderOrAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto m = ctx.pricing.GetMachinePrices(*p, req.Param("id"));
    if (!m.ok()) return http::ErrorResponse(m.status());
    return http::Response::Json(200, MachinePricesJson(*m));
  });
  r.Add("PUT", "/api/v1/machines/{id}/prices", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto items = DecodePrices(req);
    if (!items.ok()) return http::ErrorResponse(items.status());
    auto m = ctx.pricing.SetMachinePrices(*p, req.Param("id"), *items);
    if (!m.ok()) return http::ErrorResponse(m.status());
    return http::Response::Json(200, MachinePricesJson(*m));
  });
}

}  // namespace gpunex::platform::api
