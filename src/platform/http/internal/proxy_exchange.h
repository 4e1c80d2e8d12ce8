// The proxy's exchanges (proxy.h): on a server whose options name a ProxyAuthorizer, the
// session hands every request to ServeProxy once its header is in.
//
// Thread-safety: ServeProxy runs on the connection's strand, as two coroutines (the
// request's way up and the response's way down, both on the strand); the authorizer runs
// on the worker pool; the upstream's sink is called from the upstream's thread and only
// sets flags under a lock and wakes the coroutines through the strand.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <map>
#include <string>

#include "platform/http/internal/http_io.h"
#include "platform/http/internal/server_state.h"
#include "platform/http/proxy.h"

namespace gpunex::platform::http::internal {

// Serves the request whose header `parser` has read (its body, if any, still unread) as
// the proxy. Returns whether the connection may carry another request; when it may not,
// it has been closed. Instantiated for PlainStream and TlsStream.
// `authorize` decides (ServerOptions::proxy, or a route's of proxy_routes, with `params`
// the route's {names} in the path).
template <typename Stream>
asio::awaitable<bool> ServeProxy(ServerState& state, Stream& stream, beast::flat_buffer& buffer,
                                 bhttp::request_parser<bhttp::string_body>& parser,
                                 const std::string& remote, const ProxyAuthorizer& authorize,
                                 std::map<std::string, std::string> params);
extern template asio::awaitable<bool> ServeProxy<PlainStream>(
    ServerState&, PlainStream&, beast::flat_buffer&, bhttp::request_parser<bhttp::string_body>&,
    const std::string&, const ProxyAuthorizer&, std::map<std::string, std::string>);
extern template asio::awaitable<bool> ServeProxy<TlsStream>(
    ServerState&, TlsStream&, beast::flat_buffer&, bhttp::request_parser<bhttp::string_body>&,
    const std::string&, const ProxyAuthorizer&, std::map<std::string, std::string>);

// The proxied route of `options` whose pattern matches the target's path, with the
// pattern's {names} in `params`; null when none (or the target does not parse).
const ProxyAuthorizer* FindProxyRoute(const ServerOptions& options, beast::string_view target,
                                      std::map<std::string, std::string>* params);

}  // namespace gpunex::platform::http::internal
