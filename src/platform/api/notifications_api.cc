// /api/v1/notifications
#include "platform/api/api.h"
#include "common/paging.h"
#include "platform/notify/notify.h"

namespace gpunex::platform::api {

void RegisterNotificationRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("GET", "/api/v1/notifications", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto limit = ParsePageLimit(req.Query("limit"), 50, 100);
    if (!limit.ok()) return http::ErrorResponse(limit.status());
    std::string unread = req.Query("unread");
    if (!unread.empty() && unread != "true" && unread != "false") {
      return http::ErrorResponse(FieldError("unread", "must be true or false"));
    }
    auto page = notify::ListNotifications(ctx.db, p->user.id, *limit, req.Query("cursor"),
                                          unread == "true");
    if (!page.ok()) return http::ErrorResponse(page.status());
    json::array items;
    for (const auto& n : page->items) {
      json::object o{{"id", n.id},       {"at", FormatRfc3339(n.at)}, {"kind", n.kind},
                     {"title", n.title}, {"body", n.body},            {"read", n.read}};
      o["link"] = n.link.empty() ? json::value(nullptr) : json::value(n.link);
      items.push_back(std::move(o));
    }
    json::object out{{"items", std::move(items)}, {"unread_count", page->unread_count}};
    out["next_cursor"] = page->next_cursor.empty() ? json::value(nullptr) : json::value(page->next_cursor);
    return http::Response::Json(200, out);
  });

  r.Add("POST", "/api/v1/notifications/{id}/read", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    Status st = notify::MarkNotificationRead(ctx.db, p->user.id, req.Param("id"));
    if (!st.ok()) return http::ErrorResponse(st);
    return http::Response::NoContent();
  });

  r.Add("POST", "/api/v1/notifications/read-all", [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    int64_t n = 0;
    Status st = notify::MarkAllRead(ctx.db, p->user.id, &n);
    if (!st.ok()) return http::ErrorResponse(st);
    return http::Response::Json(200, json::object{{"marked", n}});
  });
}

}  // namespace gpunex::platform::api
