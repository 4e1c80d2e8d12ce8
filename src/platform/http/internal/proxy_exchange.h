// The proxy's exchanges (proxy.h): on a server whose options name a ProxyAuthorizer, the
// session hands every request to ServeProxy once its header is in.
//
// Thread-safety: ServeProxy runs on the connection's strand, as two coroutines (the
// request's way up and the response's way down, both on the strand); the authorizer runs
// on the worker pool; the upstream's sink is called from the upstream's thread and only
// sets flags under a lock and wakes the coroutines through the strand.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <string>

#include "platform/http/internal/http_io.h"
#include "platform/http/internal/server_state.h"

namespace gpunex::platform::http::internal {

// Serves the request whose header `parser` has read (its body, if any, still unread) as
// the proxy. Returns whether the connection may carry another request; when it may not,
// it has been closed. Instantiated for PlainStream and TlsStream.
template <typename Stream>
asio::awaitable<bool> ServeProxy(ServerState& state, Stream& stream, beast::flat_buffer& buffer,
                                 bhttp::request_parser<bhttp::string_body>& parser,
                                 const std::string& remote);
extern template asio::awaitable<bool> ServeProxy<PlainStream>(
    ServerState&, PlainStream&, beast::flat_buffer&, bhttp::request_parser<bhttp::string_body>&,
    const std::string&);
extern template asio::awaitable<bool> ServeProxy<TlsStream>(
    ServerState&, TlsStream&, beast::flat_buffer&, bhttp::request_parser<bhttp::string_body>&,
    const std::string&);

}  // namespace gpunex::platform::http::internal
