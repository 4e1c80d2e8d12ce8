// Stream transfers (stream.h): a request on a stream route is served by ServeStream on
// the session coroutine once its header is in, instead of going to the Handler. A
// download goes through Beast's serializer from one shared pattern buffer; an upload is
// read straight from the stream into the connection's buffer and counted by Beast's
// parser without being copied. Neither body is ever held in memory.
//
// Thread-safety: ServeStream runs on the connection's strand (the authorizer on the worker
// pool); the shared pattern buffer is built once and only read afterwards.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <string>

#include "platform/http/internal/http_io.h"
#include "platform/http/internal/server_state.h"
#include "platform/http/server.h"
#include "platform/http/stream.h"

namespace gpunex::platform::http::internal {

// The stream route of `options` for a request target, or null (also for a target that
// does not parse: the normal path answers it).
const StreamRoute* FindStreamRoute(const ServerOptions& options, beast::string_view target);

// Serves a request on a stream route whose header `parser` has read (its body, if any,
// is still unread). Returns whether the connection may carry another request; when it
// may not, it has been closed. Instantiated for PlainStream and TlsStream.
template <typename Stream>
asio::awaitable<bool> ServeStream(ServerState& state, Stream& stream, beast::flat_buffer& buffer,
                                  bhttp::request_parser<bhttp::string_body>& parser,
                                  const StreamRoute& route, const std::string& remote);
extern template asio::awaitable<bool> ServeStream<PlainStream>(
    ServerState&, PlainStream&, beast::flat_buffer&, bhttp::request_parser<bhttp::string_body>&,
    const StreamRoute&, const std::string&);
extern template asio::awaitable<bool> ServeStream<TlsStream>(
    ServerState&, TlsStream&, beast::flat_buffer&, bhttp::request_parser<bhttp::string_body>&,
    const StreamRoute&, const std::string&);

}  // namespace gpunex::platform::http::internal
