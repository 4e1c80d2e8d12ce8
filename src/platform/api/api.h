// The REST API under /api/v1 plus /healthz, /readyz and /metrics: one file per
// resource (auth_api.cc, applications_api.cc, ...). Handlers parse the request, call the
// domain, and map the result. Each route declares its access when it is registered (the
// route access names below); the API's guard (http::Guard) authenticates the caller and
// refuses a missing credential, scope or role before any handler runs, and the domain
// applies its ownership rules to the caller it found (RequireUser).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <type_traits>

#include "common/paging.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/applications/applications.h"
#include "platform/availability/availability.h"
#include "platform/benchmarks/benchmarks.h"
#include "platform/billing/billing.h"
#include "platform/config/config.h"
#include "platform/fleet/fleet.h"
#include "platform/fleet/workloads.h"
#include "platform/http/http.h"
#include "platform/http/metrics.h"
#include "platform/http/router.h"
#include "platform/http/stream.h"
#include "platform/http/websocket.h"
#include "platform/idempotency/idempotency.h"
#include "platform/market/market.h"
#include "platform/module/module.h"
#include "platform/notify/verify.h"
#include "platform/payouts/payouts.h"
#include "platform/pricing/pricing.h"
#include "platform/providers/providers.h"
#include "platform/reliability/reliability.h"
#include "platform/rentals/jobs.h"
#include "platform/rentals/rentals.h"
#include "platform/store/db.h"
#include "platform/topups/topups.h"

namespace gpunex::platform::api {

inline constexpr std::string_view kSessionCookie = "gpunex_session";
inline constexpr std::string_view kCsrfCookie = "gpunex_csrf";
inline constexpr std::string_view kCsrfHeader = "X-CSRF-Token";

// Route access: what a route asks of its caller, declared when it is registered
// (http::Router::Add: r.Add("PATCH", "/api/v1/machines/{id}", kProvider, handler)) and
// checked by the API's guard before the handler runs (docs/security.md, "API key
// scopes"). Every access but kPublic authenticates the caller: a session (bearer token,
// or the cookie with X-CSRF-Token on anything but GET and HEAD) or an API key, which then
// needs the read scope for GET and HEAD and the write scope for any other method, besides
// what the access adds. No or bad credentials: 401; a missing scope or role: 403 naming it.
//
// Anyone; credentials are not read (sign-up, log-in, health, the catalog, the dashboard).
inline constexpr std::string_view kPublic = "public";
// Anyone; credentials, when sent, are checked as kUser checks them and change the answer
// (the marketplace shows a provider its own machines).
inline constexpr std::string_view kPublicOrUser = "public_or_user";
// A signed-in user: the customer's routes and the account's own.
inline constexpr std::string_view kUser = "user";
// The provider role; an API key needs the provider scope (without it a provider's key
// is a customer's).
inline constexpr std::string_view kProvider = "provider";
// The provider or the admin role (admins read providers' machines and help with them).
inline constexpr std::string_view kProviderOrAdmin = "provider_or_admin";
// The admin role; an API key needs the admin scope.
inline constexpr std::string_view kAdmin = "admin";
// A logged-in session, never an API key: what makes credentials or changes the password,
// so that a stolen key cannot plant a successor.
inline constexpr std::string_view kSession = "session";
// kProvider and kSession both: the provider's agent tokens.
inline constexpr std::string_view kProviderSession = "provider_session";

// What the handlers reach. The services of the modules registered before this context
// existed have a member each; any module's are in `services` (module.h).
struct ApiContext {
  const Config& config;
  store::Database& db;
  const Clock& clock;
  accounts::Accounts& accounts;
  providers::Providers& providers;
  applications::Applications& applications;
  http::Metrics& metrics;
  fleet::Fleet& fleet;
  fleet::Workloads& workloads;
  benchmarks::Benchmarks& benchmarks;
  idempotency::Idempotency& idempotency;
  availability::Availability& availability;
  reliability::Reliability& reliability;
  pricing::Pricing& pricing;
  market::Market& market;
  billing::Billing& billing;
  rentals::Rentals& rentals;
  rentals::Jobs& jobs;
  payouts::Payouts& payouts;
  topups::Topups& topups;
  const notify::EmailVerifier& verifier;
  const Services& services;
  std::function<bool()> ready;  // false while starting or draining
  // Called before /metrics renders, to refresh figures other modules keep (outbox).
  std::function<void(http::Metrics&)> collect_metrics;
};

// Every route: the system endpoints, each of `modules`' routes and the web dashboard,
// which answers GET for every other path (platform/web/static_site.h), behind the API's
// guard. REQUIRES: `router` has no routes and no guard yet.
void RegisterRoutes(http::Router& router, const ApiContext& ctx,
                    const std::vector<Module>& modules);

// Adds the headers every response carries (no-sniff, frame denial, no-store for the API).
http::Response WithCommonHeaders(const http::Request& req, http::Response resp);

// Serves one request through `router` (set up by RegisterRoutes), whose guard also
// handles Idempotency-Key (idempotency.h) for the state-changing requests of the REST
// API, once it has let the caller in: a request that carries the header is answered
// once, and repeats get that answer back ("Idempotent-Replayed: true"). Log-in, sign-up
// and the requests that answer with a secret shown once (new API keys and agent tokens)
// ignore the header: their answer is never stored.
http::Response Dispatch(const ApiContext& ctx, const http::Router& router, http::Request& req);

// --- helpers shared by the resource files ---

// The caller, as the guard authenticated it for the route: for any access but kPublic,
// and for kPublicOrUser when the request carries credentials. kUnauthenticated when the
// guard found none (a public route has no caller).
StatusOr<accounts::Principal> RequireUser(const http::Request& req, const ApiContext& ctx);

// The caller of a WebSocket upgrade request (which no router guard sees), let in as the
// guard lets in a state-changing request of a route with `access` (an API key needs the
// write scope): "Authorization: Bearer" (session or API key) or the session cookie. A cookie is
// taken only from a page of the platform's own origin (the Origin header equals the public URL's),
// so that another site's page cannot open a socket with a visitor's cookie (cross-site WebSocket
// hijacking).
StatusOr<accounts::Principal> AuthenticateUpgrade(const http::Request& req, const ApiContext& ctx,
                                                  std::string_view access);

// The caller of a request that no router guard sees (a proxied route, http/proxy.h), let
// in as the guard lets in a request of a route with `access` and the request's method.
StatusOr<accounts::Principal> AuthenticateRequest(const http::Request& req, const ApiContext& ctx,
                                                  std::string_view access);

// The JSON body; kInvalidArgument naming "body" when it is not JSON or has another
// Content-Type.
StatusOr<json::value> JsonBody(const http::Request& req);
// The JSON body as an object; a field error on "body" when it is another JSON value.
StatusOr<json::object> JsonObjectBody(const http::Request& req);

http::Response Reply(int status, const StatusOr<json::object>& result);

// `?limit=&cursor=` of a list request: `limits.default_limit` when limit is absent, a
// field error naming "limit" outside 1..limits.max_limit, one naming "cursor" for a
// cursor this server did not make.
StatusOr<PageRequest> ParsePageRequest(const http::Request& req, PageLimits limits);

// {"items": [...], "next_cursor": "..." | null} for a page, each item encoded by `encode`.
template <typename T, typename Encode>
json::object PageJson(const Page<T>& page, Encode encode) {
  json::array items;
  for (const T& item : page.items) items.push_back(encode(item));
  return {{"items", std::move(items)},
          {"next_cursor", page.next ? json::value(page.next->Encode()) : json::value(nullptr)}};
}

// A user as the API shows it: {id, email, name, roles, created_at}.
json::object UserJson(const accounts::User& u);

// RFC 3339 text, or null.
json::value TimeJson(const std::optional<Timestamp>& t);
// The string, or null.
json::value OptJson(const std::optional<std::string>& s);
// The name of a value of a closed set (common/enum_names.h), or null.
template <typename E>
requires std::is_enum_v<E> json::value OptJson(const std::optional<E>& v) {
  return v ? json::value(Name(*v)) : json::value(nullptr);
}

// One CSV field (RFC 4180 quoting); text that a spreadsheet would read as a formula
// (starting with = + - @) gets a leading apostrophe.
std::string CsvField(std::string_view s);

// ?from=&to= as RFC 3339 times or dates (YYYY-MM-DD: midnight UTC); `to` is exclusive.
// Absent: the epoch and the end of time. Field errors name "from" and "to".
StatusOr<std::pair<Timestamp, Timestamp>> DateRange(const http::Request& req);

void RegisterAuthRoutes(http::Router& r, const ApiContext& ctx);
void RegisterApplicationRoutes(http::Router& r, const ApiContext& ctx);
void RegisterProviderRoutes(http::Router& r, const ApiContext& ctx);
void RegisterCatalogRoutes(http::Router& r, const ApiContext& ctx);
void RegisterNotificationRoutes(http::Router& r, const ApiContext& ctx);
void RegisterSystemRoutes(http::Router& r, const ApiContext& ctx);
void RegisterMachineRoutes(http::Router& r, const ApiContext& ctx);
void RegisterWorkloadRoutes(http::Router& r, const ApiContext& ctx);
void RegisterAgentRoutes(http::Router& r, const ApiContext& ctx);
void RegisterBenchmarkRoutes(http::Router& r, const ApiContext& ctx);
void RegisterAvailabilityRoutes(http::Router& r, const ApiContext& ctx);
void RegisterReliabilityRoutes(http::Router& r, const ApiContext& ctx);
void RegisterPricingRoutes(http::Router& r, const ApiContext& ctx);
void RegisterMarketRoutes(http::Router& r, const ApiContext& ctx);
void RegisterRentalRoutes(http::Router& r, const ApiContext& ctx);
void RegisterPayoutRoutes(http::Router& r, const ApiContext& ctx);
void RegisterTopupRoutes(http::Router& r, const ApiContext& ctx);

// The fields of a body that asks for a container: each key of `body` that is neither in
// `known` nor allowed is a field error, with the reason for the container options the
// isolation policy never allows (privileged, binds, cap_add, network_mode, ...; ISO-1).
void RejectContainerOptions(const json::object& body, std::span<const std::string_view> known,
                            FieldErrors& errors);
// image (required), command (a list of strings), env (an object of strings), with the
// errors in r.errors(); the values' own rules are the fleet's (fleet::ValidateContainer).
void DecodeContainer(const JsonReader& r, fleet::ContainerSpec* container);

// A schedule (docs/api.md's availability) under `key` of `parent`; nullopt when absent
// or undecodable (the errors are in parent.errors()).
std::optional<applications::Availability> DecodeSchedule(const JsonReader& parent,
                                                         std::string_view key, bool required);
json::object ScheduleJson(const applications::Availability& a);
// The decoding errors plus the domain's errors on what was decoded, less those under
// values that could not be decoded (reported already), as one validation failure.
Status MergeFieldErrors(FieldErrors decoded, const FieldErrors& domain);

// The installer script with the platform's URL and the agent image filled in.
std::string RenderInstallScript(std::string_view public_url, std::string_view agent_image);

// The agent behind "Authorization: Bearer <agent token>" of a request to one of the
// agent's endpoints; `what` names the endpoint in the refusal, and a refusal is logged.
StatusOr<providers::AgentIdentity> AuthenticateAgentRequest(const http::Request& req,
                                                            const ApiContext& ctx,
                                                            std::string_view what);

// The WebSocket acceptor for /api/v1/agent/connect: verifies the agent token and opens
// a fleet session for its provider.
http::WebSocketAcceptor AgentChannelAcceptor(const ApiContext& ctx);
inline constexpr std::string_view kAgentConnectPath = "/api/v1/agent/connect";

// The authorizer of the agent's throughput benchmark, both stream routes
// (http/stream.h): GET kAgentBenchDownloadPath?bytes=N (1 <= N <= 1 GiB) and POST
// kAgentBenchUploadPath (a body of at most 1 GiB), authenticated with an agent token as
// the channel is; at most kAgentBenchTransfersPerToken at a time per token (429 beyond).
http::StreamAuthorizer AgentBenchAuthorizer(const ApiContext& ctx);
inline constexpr std::string_view kAgentBenchDownloadPath = "/api/v1/agent/bench/download";
inline constexpr std::string_view kAgentBenchUploadPath = "/api/v1/agent/bench/upload";
inline constexpr int64_t kAgentBenchMaxBytes = int64_t{1} << 30;
inline constexpr int kAgentBenchTransfersPerToken = 2;

}  // namespace gpunex::platform::api
