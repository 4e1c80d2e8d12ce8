// Where the agent's WebSocket goes: the platform URL taken apart, and the HTTP proxy (if
// any) to tunnel through, chosen from the options or the environment the way curl does.
// Pure functions over strings, so the choices are testable without sockets; the client
// (websocket_client.cc) is their only user.
//
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace gpunex::net {

// A parsed ws://, wss://, http:// or https:// URL (http and https mean ws and wss).
struct WebSocketEndpoint {
  bool tls = false;
  std::string host;    // a name or an IP address; an IPv6 address without brackets
  uint16_t port = 0;   // the URL's, or 80 / 443
  std::string target;  // path and query, at least "/": "/api/v1/agent/connect?x=1"

  // "host:port" ("[v6]:port"): what a CONNECT request names.
  std::string Authority() const;
  // The Host header: the host, with ":port" unless it is the scheme's default.
  std::string HostHeader() const;
};

// Fails with kInvalidArgument naming what is wrong: another scheme, no host, a bad port,
// credentials in the URL.
StatusOr<WebSocketEndpoint> ParseWebSocketUrl(std::string_view url);

// An HTTP proxy reached with CONNECT.
struct HttpProxy {
  std::string host;
  uint16_t port = 0;
  // The Proxy-Authorization value ("Basic <base64 of user:password>") when the proxy URL
  // carries credentials (percent-decoded), else "".
  std::string authorization;
};

// "http://[user:password@]host[:port][/]" or "host[:port]"; the port defaults to 80.
// Fails with kInvalidArgument for other schemes (https://, socks5://) and malformed URLs.
StatusOr<HttpProxy> ParseProxyUrl(std::string_view url);

// Looks up an environment variable: nullopt when unset. Injectable for tests.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
// The process environment.
std::optional<std::string> ProcessEnv(const char* name);

// The proxy to reach `endpoint` through, or nullopt to connect directly.
// A non-empty `proxy_url` is always used. Otherwise the environment decides: HTTPS_PROXY
// (then https_proxy) for wss, HTTP_PROXY (then http_proxy) for ws, unless NO_PROXY (or
// no_proxy) matches the endpoint (see NoProxyMatches). Fails when the chosen proxy URL is
// malformed.
StatusOr<std::optional<HttpProxy>> ChooseProxy(const WebSocketEndpoint& endpoint,
                                               const std::string& proxy_url,
                                               const EnvLookup& env = ProcessEnv);

// Whether a NO_PROXY list (entries separated by commas or spaces) exempts host:port.
// Entries: "*" (everything); a domain ("example.com", ".example.com" or "*.example.com":
// the domain and its subdomains); an IP address; a CIDR block ("10.0.0.0/8", "fd00::/8");
// each optionally with ":port" (then only that port; IPv6 in brackets). Case-insensitive.
bool NoProxyMatches(std::string_view no_proxy, std::string_view host, uint16_t port);

// RFC 4648 base64 with padding (Basic authentication).
std::string Base64Encode(std::string_view data);

}  // namespace gpunex::net
