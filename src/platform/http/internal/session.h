// The HTTP session of one accepted connection: it registers the connection with the
// server (so that Shutdown() can find it), does the TLS handshake when the server serves
// HTTPS, and then reads requests one after the other (with the size limits and timeouts
// of ServerOptions), runs the Handler for each on the worker pool and writes the answer,
// keeping the connection alive between requests. A request on a stream route goes to
// ServeStream (stream_transfer.h), an accepted WebSocket upgrade to ServeWebSocket
// (websocket_connection.h), which then own the connection.
//
// This header names Asio but not Beast: the server (server.cc) starts sessions without
// compiling Beast.
//
// Thread-safety: a session is a coroutine on the connection's own strand, so the state of
// its connection needs no lock; it waits for the worker pool without blocking an I/O
// thread.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "platform/http/internal/server_state.h"

namespace gpunex::platform::http::internal {

// Serves `socket` (accepted, its executor a strand of its own) until the connection is
// closed, the peer has left or the server has drained. `state` must outlive the
// coroutine, including its destruction unfinished with the server's loops.
asio::awaitable<void> ServeConnection(ServerState& state, tcp::socket socket);

}  // namespace gpunex::platform::http::internal
