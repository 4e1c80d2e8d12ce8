// The REST API under /api/v1 plus /healthz, /readyz and /metrics: one file per
// resource (auth_api.cc, applications_api.cc, ...). Handlers parse the request, call the
// domain, and map the result; authorization is checked in every handler through
// RequireUser and the domain's own ownership rules.
#pragma once

#include <functional>

#include "platform/accounts/accounts.h"
#include "platform/applications/applications.h"
#include "platform/config/config.h"
#include "platform/http/http.h"
#include "platform/http/metrics.h"
#include "platform/http/router.h"
#include "platform/providers/providers.h"
#include "platform/store/db.h"

namespace gpunex::platform::api {

inline constexpr std::string_view kSessionCookie = "gpunex_session";
inline constexpr std::string_view kCsrfCookie = "gpunex_csrf";
inline constexpr std::string_view kCsrfHeader = "X-CSRF-Token";

struct ApiContext {
  const Config& config;
  store::Database& db;
  accounts::Accounts& accounts;
  providers::Providers& providers;
  applications::Applications& applications;
  http::Metrics& metrics;
  std::function<void()> wake_outbox;  // after a commit that enqueued email
  std::function<bool()> ready;        // false while starting or draining
  // Called before /metrics renders, to refresh figures other modules keep (outbox).
  std::function<void(http::Metrics&)> collect_metrics;
};

void RegisterRoutes(http::Router& router, const ApiContext& ctx);

// Adds the headers every response carries (no-sniff, frame denial, no-store for the API).
http::Response WithCommonHeaders(const http::Request& req, http::Response resp);

// --- helpers shared by the resource files ---

// The caller, from "Authorization: Bearer" or the session cookie. Cookie-authenticated
// requests that change state must carry the session's CSRF token in X-CSRF-Token.
StatusOr<accounts::Principal> RequireUser(const http::Request& req, const ApiContext& ctx);

// The JSON body; kInvalidArgument naming "body" when it is not JSON or has another
// Content-Type.
StatusOr<json::value> JsonBody(const http::Request& req);

http::Response Reply(int status, const StatusOr<json::object>& result);

void RegisterAuthRoutes(http::Router& r, const ApiContext& ctx);
void RegisterApplicationRoutes(http::Router& r, const ApiContext& ctx);
void RegisterProviderRoutes(http::Router& r, const ApiContext& ctx);
void RegisterCatalogRoutes(http::Router& r, const ApiContext& ctx);
void RegisterNotificationRoutes(http::Router& r, const ApiContext& ctx);
void RegisterSystemRoutes(http::Router& r, const ApiContext& ctx);

}  // namespace gpunex::platform::api
