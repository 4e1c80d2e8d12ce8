// Streaming endpoints of the HTTP server: bulk transfers whose bodies are never held in
// memory (the agent's network throughput benchmark). A route is registered in
// ServerOptions::stream_routes under an exact path with its kind and a StreamAuthorizer.
//
// For a request on that path the server runs the authorizer on a worker thread before any
// body byte is sent or read (so a client that sent "Expect: 100-continue" is refused
// without sending its body); an error Status is answered with the usual JSON error
// response (401, 429, ...). Then:
//   - a download route (GET) answers 200 with exactly StreamGrant::bytes bytes of
//     application/octet-stream, an incompressible pattern sent over and over from one
//     shared buffer (never compressed);
//   - an upload route (POST) reads the body (Content-Length or chunked) through a reused
//     1 MiB buffer, discards it, and answers 200 with {"bytes": N, "seconds": S}: the
//     body's length and the seconds from when the server began reading it to its last
//     byte. A body longer than StreamGrant::bytes is answered 413, whether its
//     Content-Length says so or its chunks do (ServerOptions::max_body_bytes does not
//     apply).
// Another method is answered 405, a download request with a body 400. Each read or write
// must make progress within ServerOptions::read_timeout and the whole body must move
// within ServerOptions::stream_timeout; a transfer cut short (the peer left, a timeout, a
// shutdown) closes the connection. These requests bypass the Handler (and so the router's
// metrics); each transfer is logged ("http.stream").
//
// Beast and Asio stay inside the server's implementation (internal/stream_transfer.cc); this
// header names no Boost type.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "common/status.h"
#include "platform/http/http.h"

namespace gpunex::platform::http {

// What a stream route's authorizer grants one request.
struct StreamGrant {
  // Download: the number of bytes sent. Upload: the longest body accepted.
  uint64_t bytes = 0;
  // Kept until the transfer has ended, however it ended: e.g. a slot that limits
  // concurrent transfers. May be null.
  std::shared_ptr<void> hold;
};

// Decides whether to serve a request on a stream route from its method, target, query,
// headers and remote address (the body is still unread). Runs on a worker thread, so it
// may block on the database; exceptions are answered with a 500.
using StreamAuthorizer = std::function<StatusOr<StreamGrant>(const Request& request)>;

struct StreamRoute {
  enum class Kind { kDownload, kUpload };  // GET, POST
  Kind kind = Kind::kDownload;
  StreamAuthorizer authorize;
};

}  // namespace gpunex::platform::http
