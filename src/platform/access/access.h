// Reaching rentals' HTTP ports through the access listener (issue 25, docs/access.md):
// where a port answers (its URLs, by host name and by path), the access tokens a
// customer hands to a browser or a program, and the gate that decides each request the
// listener proxies (Gate, in access_gate.cc).
//
// A port is reached by host name, http(s)://{label}-{port}.{domain}/, where the label is
// the rental id's 26 characters after "rnt_" in lower case (host names take no
// underscore, and browsers lower-case them), or by path, {public_url}/r/{rental_id}/{port}/
// where no wildcard DNS name exists. The listener is never the dashboard's origin.
//
// Thread-safety: Access is thread-safe (each call is one transaction; the public URL,
// set once the listener is bound, under a lock).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/access/access_store.h"
#include "platform/http/proxy.h"
#include "platform/store/db.h"

namespace gpunex::platform {
namespace accounts {
class Accounts;
}  // namespace accounts
namespace relay {
class Relay;
}  // namespace relay
namespace rentals {
struct Rental;
}  // namespace rentals
}  // namespace gpunex::platform

namespace gpunex::platform::access {

// The cookie a ?gpx_token= is traded for, on the port's host (or path) only.
inline constexpr std::string_view kAccessCookie = "gpunex_access";
// The query parameter that carries an access token in a link.
inline constexpr std::string_view kTokenParam = "gpx_token";
// Access tokens start with this (sessions "gpx_s", API keys "gpx_k").
inline constexpr std::string_view kTokenPrefix = "gpx_r";

struct AccessOptions {
  // "host:port" of the access listener; "" : none (rentals' HTTP ports are not served).
  std::string listen;
  // The domain under which each port has a host name: {label}-{port}.{domain}.
  std::string domain = "localhost";
  // The listener's URL as users reach it ("https://access.example.com"); "" : derived
  // from the listen address once bound (http://host:port).
  std::string public_url;
  // Serve HTTPS only (a certificate for *.{domain} and the public URL's host).
  std::string tls_cert_file;
  std::string tls_key_file;
  // An exchange (or a keep-alive connection) with no byte moving for this long is cut.
  std::chrono::seconds idle_timeout{3600};
  // Access tokens: how long one lasts unless asked otherwise, and at most.
  std::chrono::seconds token_ttl{24 * 3600};
  std::chrono::seconds max_token_ttl{30 * 24 * 3600};
  // Tokens one rental may hold unrevoked and unexpired at once.
  int64_t max_tokens_per_rental = 20;

  // The SSH gateway (platform/sshgate): "host:port" to listen on; "" : none.
  std::string ssh_listen;
  // "host:port" (or "host") customers connect to, as the rental page and
  // GET /api/v1/access/ssh show it; "" : the public URL's host and the bound port.
  std::string ssh_public_address;
  // A connection with no byte and no keepalive moving for this long is closed.
  std::chrono::seconds ssh_idle_timeout{3600};
  // SSH connections one rental may have open at once.
  int64_t ssh_max_connections_per_rental = 16;
  // Connections from one address that fail to sign in within ten minutes, after which
  // the address is refused for the rest of those ten minutes.
  int64_t ssh_max_failures_per_address = 20;

  const Clock* clock = &SystemClock();
};

// "{26 lower-case characters}-{port}" for rental "rnt_{26 characters}".
std::string HostLabel(std::string_view rental_id, int port);

// A port named by a request: its rental and port, and for the path form the prefix
// ("/r/rnt_.../8080") the upstream does not see.
struct PortAddress {
  std::string rental_id;
  int port = 0;
  std::string prefix;
};
// The port a Host header names ("{label}-{port}.{domain}", any case, with or without
// ":port"), or nullopt.
std::optional<PortAddress> PortOfHost(std::string_view host, std::string_view domain);
// The port a raw request target names ("/r/{rental_id}/{port}" then "/..." or "?..." or
// nothing), or nullopt.
std::optional<PortAddress> PortOfPath(std::string_view target);

// Where one HTTP port of a rental answers.
struct PortUrls {
  std::string host_url;  // http(s)://{label}-{port}.{domain}[:port]/
  std::string path_url;  // {public_url}/r/{rental_id}/{port}/
};

struct NewAccessToken {
  AccessToken token;
  std::string secret;  // shown once; only its SHA-256 is kept
};

class Access {
 public:
  Access(store::Database& db, AccessOptions options);

  const AccessOptions& options() const { return options_; }
  // The listener is bound: its URL, when the options name none.
  void Bound(const std::string& public_url) EXCLUDES(mu_);
  // Where `port` of `rental_id` answers; nullopt without an access listener.
  std::optional<PortUrls> UrlsOf(const std::string& rental_id, int port) const EXCLUDES(mu_);

  // A token for rental `r` (its customer's, while it is active), lasting `ttl` (the
  // default when none). Field error "ttl_s" beyond max_token_ttl; kFailedPrecondition for
  // an ended rental or one that holds max_tokens_per_rental.
  StatusOr<NewAccessToken> CreateToken(const rentals::Rental& r,
                                       std::optional<std::chrono::seconds> ttl);
  // The rental's tokens, newest first, revoked and expired ones included.
  StatusOr<std::vector<AccessToken>> ListTokens(const std::string& rental_id);
  // kNotFound when the rental has no such token.
  Status RevokeToken(const std::string& rental_id, const std::string& token_id);
  // The live token `secret` is; kUnauthenticated when it is unknown, expired or revoked.
  StatusOr<AccessToken> CheckToken(std::string_view secret);

 private:
  store::Database& db_;
  const AccessOptions options_;
  mutable Mutex mu_;
  std::string public_url_ GUARDED_BY(mu_);
};

// The access listener's gate (http/proxy.h): finds the rental's port a request names,
// lets in its customer (an access token, or a session or API key with the write scope, as
// a bearer header), anyone for a public port, and opens a stream to the port through
// the relay; strips the platform's credentials from what the container gets.
http::ProxyAuthorizer Gate(Access& access, accounts::Accounts& accounts, relay::Relay& relay,
                           store::Database& db);

}  // namespace gpunex::platform::access
