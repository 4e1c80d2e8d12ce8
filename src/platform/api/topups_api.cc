// /api/v1/topups: customers' USDC top-ups paid with Solana Pay (PAY-6; topups/topups.h).
#include <limits>

#include "platform/api/api.h"
#include "platform/topups/topups.h"

namespace gpunex::platform::api {
namespace {

json::object TopupJson(const topups::Topup& t) {
  return {{"id", t.id},
          {"amount_micro", t.amount.micros()},
          {"url", t.url},
          {"reference", t.reference},
          {"recipient", t.recipient},
          {"mint", t.mint},
          {"status", Name(t.status)},
          {"signature", OptJson(t.signature)},
          {"credited_micro", t.credited ? json::value(t.credited->micros()) : json::value(nullptr)},
          {"detail", t.detail},
          {"created_at", FormatRfc3339(t.created_at)},
          {"expires_at", FormatRfc3339(t.expires_at)},
          {"credited_at", TimeJson(t.credited_at)}};
}

http::Response TopupReply(int status, const StatusOr<topups::Topup>& t) {
  if (!t.ok()) return http::ErrorResponse(t.status());
  return http::Response::Json(status, TopupJson(*t));
}

}  // namespace

void RegisterTopupRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("POST", "/api/v1/topups", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    FieldErrors errors;
    JsonReader rd(*body, "", &errors);
    rd.RejectUnknown({"amount_micro"});
    // Any integer decodes; the bounds are the domain's, with its message.
    auto amount = rd.Int("amount_micro", true, std::numeric_limits<int64_t>::min(),
                         std::numeric_limits<int64_t>::max());
    if (!errors.empty()) return http::ErrorResponse(ValidationFailed(std::move(errors)));
    return TopupReply(201, ctx.topups.Create(*p, Usdc::Micros(*amount)));
  });
  r.Add("GET", "/api/v1/topups", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto page = ParsePageRequest(req, {50, 200});
    if (!page.ok()) return http::ErrorResponse(page.status());
    auto list = ctx.topups.List(*p, *page);
    if (!list.ok()) return http::ErrorResponse(list.status());
    return http::Response::Json(200, PageJson(*list, TopupJson));
  });
  r.Add("GET", "/api/v1/topups/{id}", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return TopupReply(200, ctx.topups.Get(*p, req.Param("id")));
  });
  r.Add("GET", "/api/v1/topups/{id}/qr.svg", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto svg = ctx.topups.QrSvg(*p, req.Param("id"));
    if (!svg.ok()) return http::ErrorResponse(svg.status());
    http::Response resp = http::Response::Text(200, std::move(*svg), "image/svg+xml");
    // Ours and static, but an SVG opened as a document could run script: none may.
    resp.SetHeader("Content-Security-Policy", "default-src 'none'; sandbox");
    return resp;
  });
}

}  // namespace gpunex::platform::api
