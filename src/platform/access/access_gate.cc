// The access listener's gate (access.h, Gate; docs/access.md): which rental's port a
// request names, who may reach it, what of the request the container gets, and the
// relay stream that carries it.
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "common/ascii.h"
#include "common/log.h"
#include "platform/access/access.h"
#include "platform/accounts/accounts.h"
#include "platform/relay/relay.h"
#include "platform/rentals/rentals.h"

namespace gpunex::platform::access {
namespace {

// `target` without the query parameter gpx_token.
std::string WithoutToken(const std::string& target) {
  const size_t q = target.find('?');
  if (q == std::string::npos) return target;
  std::string out = target.substr(0, q);
  std::string query;
  size_t start = q + 1;
  while (start <= target.size()) {
    size_t amp = target.find('&', start);
    if (amp == std::string::npos) amp = target.size();
    const std::string_view part(target.data() + start, amp - start);
    const std::string_view name = part.substr(0, part.find('='));
    if (!part.empty() && name != kTokenParam) {
      if (!query.empty()) query += '&';
      query.append(part);
    }
    start = amp + 1;
  }
  if (!query.empty()) out += "?" + query;
  return out;
}

// The Cookie header without the platform's cookies; "" when none is left.
std::string WithoutPlatformCookies(std::string_view cookies) {
  std::string out;
  size_t start = 0;
  while (start < cookies.size()) {
    size_t semi = cookies.find(';', start);
    if (semi == std::string_view::npos) semi = cookies.size();
    std::string_view part = cookies.substr(start, semi - start);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    const std::string_view name = part.substr(0, part.find('='));
    if (!part.empty() && name != kAccessCookie && !name.starts_with("gpunex_")) {
      if (!out.empty()) out += "; ";
      out.append(part);
    }
    start = semi + 1;
  }
  return out;
}

// Who reaches the port, for the access log: "public", "token:atk_...", "user:usr_...".
struct Caller {
  std::string who;
  std::string token_secret;        // an access token given as ?gpx_token=, to trade for a cookie
  int64_t token_seconds_left = 0;  // its life left, for the cookie's Max-Age
};

StatusOr<Caller> Authorize(const http::Request& req, const rentals::Rental& r, Access& access,
                           accounts::Accounts& accounts) {
  std::string secret = req.Query(kTokenParam);
  const bool from_query = !secret.empty();
  std::string bearer;
  if (const std::string auth = req.Header("authorization"); auth.starts_with("Bearer ")) {
    bearer = auth.substr(7);
  }
  if (secret.empty() && bearer.starts_with(kTokenPrefix)) secret = bearer;
  if (secret.empty() && bearer.empty()) secret = req.Cookie(kAccessCookie);
  if (!secret.empty()) {
    GPUNEX_ASSIGN_OR_RETURN(AccessToken t, access.CheckToken(secret));
    if (t.rental_id != r.id) return PermissionDenied("this access token opens another rental");
    Caller c{.who = "token:" + t.id, .token_secret = "", .token_seconds_left = 0};
    if (from_query) {
      c.token_secret = secret;
      c.token_seconds_left = std::chrono::duration_cast<std::chrono::seconds>(
                                 t.expires_at - access.options().clock->Now())
                                 .count();
    }
    return c;
  }
  if (!bearer.empty()) {
    GPUNEX_ASSIGN_OR_RETURN(accounts::Principal p,
                            accounts.Authenticate(bearer, false, req.remote_addr));
    if (p.user.id != r.customer_id) {
      return PermissionDenied("only the rental's customer reaches its ports");
    }
    if (!p.can_write) {
      return PermissionDenied("an API key needs the write scope to reach a rental's ports");
    }
    return Caller{.who = "user:" + p.user.id, .token_secret = "", .token_seconds_left = 0};
  }
  return Unauthenticated("this port is private: send an access token (POST /api/v1/rentals/" +
                         r.id + "/access-tokens) as \"Authorization: Bearer\" or ?" +
                         std::string(kTokenParam) + "=, or the customer's API key");
}

http::Response Refusal(int status, std::string_view code, const std::string& message) {
  http::Response resp = http::ProtocolErrorResponse(status, code, message);
  resp.SetHeader("Cache-Control", "no-store");
  return resp;
}

}  // namespace

http::ProxyAuthorizer Gate(Access& access, accounts::Accounts& accounts, relay::Relay& relay,
                           store::Database& db) {
  return [&access, &accounts, &relay,
          &db](const http::ProxyRequest& preq) -> StatusOr<http::ProxyGrant> {
    const http::Request& req = preq.request;
    const std::string host = req.Header("host");
    std::optional<PortAddress> where = PortOfHost(host, access.options().domain);
    if (!where) where = PortOfPath(req.target);
    if (!where) {
      return NotFound(
          "this is the access listener of a gpunex platform: a rental's HTTP port "
          "answers at https://{rental}-{port}." +
          access.options().domain + "/ or under /r/{rental_id}/{port}/");
    }
    http::ProxyGrant grant;
    // The path form's root is the prefix with a slash: the container's pages link
    // relative to it.
    if (!where->prefix.empty() && req.target.size() >= where->prefix.size() &&
        (req.target.size() == where->prefix.size() || req.target[where->prefix.size()] == '?')) {
      http::Response to = Refusal(308, "moved", "the port's root ends with a slash");
      to.SetHeader("Location", where->prefix + "/" + req.target.substr(where->prefix.size()));
      grant.response = std::move(to);
      return grant;
    }
    std::vector<rentals::Rental> found;
    GPUNEX_RETURN_IF_ERROR(db.Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(found, rentals::FindRentals(tx, {where->rental_id}));
      return Status::Ok();
    }));
    if (found.empty()) return NotFound("no such rental");
    const rentals::Rental& r = found.front();
    const protocol::WorkloadPort* port = nullptr;
    for (const auto& p : r.ports) {
      if (p.port == where->port) port = &p;
    }
    if (port == nullptr) {
      return NotFound("the rental declared no port " + std::to_string(where->port) +
                      " (a rental reaches only the ports it declared)");
    }
    if (port->protocol != protocol::PortProtocol::kHttp) {
      return NotFound("port " + std::to_string(where->port) +
                      " is a TCP port: reach it through its connect WebSocket");
    }
    Caller caller{.who = "public", .token_secret = "", .token_seconds_left = 0};
    if (!port->is_public) {
      GPUNEX_ASSIGN_OR_RETURN(caller, Authorize(req, r, access, accounts));
    }
    GPUNEX_RETURN_IF_ERROR(rentals::RequireRunning(r));
    const bool secure = req.tls || access.options().public_url.starts_with("https://");
    if (!caller.token_secret.empty() && (req.method == "GET" || req.method == "HEAD")) {
      // A link with ?gpx_token=: the token becomes a cookie of this host (and path), and
      // the browser goes on to the URL without it, so that it stays out of the history,
      // the container's logs and Referer headers.
      http::Response to = Refusal(303, "see_other", "the access token is now a cookie");
      to.SetHeader("Location", WithoutToken(req.target));
      to.SetHeader("Set-Cookie",
                   std::string(kAccessCookie) + "=" + caller.token_secret +
                       "; Path=" + (where->prefix.empty() ? "/" : where->prefix + "/") +
                       "; Max-Age=" + std::to_string(caller.token_seconds_left) +
                       "; HttpOnly; SameSite=Lax" + (secure ? "; Secure" : ""));
      to.SetHeader("Referrer-Policy", "no-referrer");
      grant.response = std::move(to);
      return grant;
    }

    // What the container gets: the request less the platform's credentials, and where
    // it came from.
    std::string target = WithoutToken(req.target);
    if (!where->prefix.empty()) target = target.substr(where->prefix.size());
    for (const auto& [name, value] : preq.fields) {
      const std::string lower = AsciiLower(name);
      if (lower == "authorization" && value.starts_with("Bearer gpx_")) continue;
      if (lower == "forwarded" || lower.starts_with("x-forwarded-")) continue;
      if (lower == "cookie") {
        std::string kept = WithoutPlatformCookies(value);
        if (!kept.empty()) grant.fields.emplace_back(name, std::move(kept));
        continue;
      }
      grant.fields.emplace_back(name, value);
    }
    grant.fields.emplace_back("X-Forwarded-For", req.remote_addr);
    grant.fields.emplace_back("X-Forwarded-Proto", secure ? "https" : "http");
    if (!host.empty()) grant.fields.emplace_back("X-Forwarded-Host", host);
    if (!where->prefix.empty()) grant.fields.emplace_back("X-Forwarded-Prefix", where->prefix);
    grant.target = std::move(target);

    const int port_number = where->port;
    grant.open = [&relay, machine = r.machine_id,
                  target = StreamTarget{r.workload_id, static_cast<uint16_t>(where->port)},
                  rental = r.id](std::weak_ptr<http::UpstreamSink> sink) {
      return relay.OpenUpstream(machine, target, std::move(sink), rental);
    };
    // The access log: who reached what, when, how much; never the content.
    grant.done = [rental_id = r.id, port_number, who = caller.who, method = req.method,
                  remote = req.remote_addr](const http::ProxyExchange& x) {
      LogInfo("access.request", {{"rental_id", rental_id},
                                 {"port", port_number},
                                 {"who", who},
                                 {"method", method},
                                 {"status", x.status},
                                 {"bytes_in", x.bytes_in},
                                 {"bytes_out", x.bytes_out},
                                 {"seconds", x.seconds},
                                 {"upgraded", x.upgraded},
                                 {"complete", x.complete},
                                 {"remote", remote}});
    };
    return grant;
  };
}

}  // namespace gpunex::platform::access
