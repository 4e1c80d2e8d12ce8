// /api/v1/notifications
#include "platform/api/api.h"
#include "platform/notify/notify.h"

namespace gpunex::platform::api {
namespace {

json::object NotificationJson(const notify::Notification& n) {
  return {{"id", n.id},
          {"at", FormatRfc3339(n.at)},
          {"kind", n.kind},
          {"title", n.title},
          {"body", n.body},
          {"read", n.read},
          {"link", n.link.empty() ? json::value(nullptr) : json::value(n.link)}};
}

}  // namespace

void RegisterNotificationRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("GET", "/api/v1/notifications", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto page = ParsePageRequest(req, {50, notify::kMaxNotificationPageSize});
    if (!page.ok()) return http::ErrorResponse(page.status());
    const std::string unread = req.Query("unread");
    if (!unread.empty() && unread != "true" && unread != "false") {
      return http::ErrorResponse(FieldError("unread", "must be true or false"));
    }
    auto list = notify::ListNotifications(ctx.db, p->user.id, *page, unread == "true");
    if (!list.ok()) return http::ErrorResponse(list.status());
    json::object out = PageJson(list->page, NotificationJson);
    out["unread_count"] = list->unread_count;
    return http::Response::Json(200, out);
  });

  r.Add("POST", "/api/v1/notifications/{id}/read", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    Status st = notify::MarkNotificationRead(ctx.db, ctx.clock.Now(), p->user.id, req.Param("id"));
    if (!st.ok()) return http::ErrorResponse(st);
    return http::Response::NoContent();
  });

  r.Add("POST", "/api/v1/notifications/read-all", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    int64_t n = 0;
    Status st = notify::MarkAllRead(ctx.db, ctx.clock.Now(), p->user.id, &n);
    if (!st.ok()) return http::ErrorResponse(st);
    return http::Response::Json(200, json::object{{"marked", n}});
  });
}

}  // namespace gpunex::platform::api
