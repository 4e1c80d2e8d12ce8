// Server: the HTTP/1.1 (optionally HTTPS-only) listener of gpunexd. It parses requests
// into http::Request values, runs the Handler on a pool of worker threads (handlers may
// block on the database) and writes the Response back, keeping connections alive between
// requests.
//
// Protocol errors are answered by the server itself in the API error shape: 400 for
// malformed HTTP or a bad request target (bad percent escapes, NUL bytes, ".." segments),
// 413 for a body over max_body_bytes (refused from Content-Length before the body is
// read), 431 for headers over max_header_bytes; the connection is then closed.
//
// WebSocket endpoints (websocket.h) are listed in ServerOptions::websocket_routes. An
// upgrade request on such a path goes to the route's acceptor instead of the Handler; any
// other request on it is answered 426 "upgrade_required". Upgrade requests on other paths
// are ordinary requests for the Handler.
//
// Streaming endpoints (stream.h) are listed in ServerOptions::stream_routes: a request on
// such a path goes to the route instead of the Handler, and its body is never held in
// memory.
//
// A server whose ServerOptions::proxy is set is a reverse proxy (proxy.h): every request
// goes to it, none to the Handler, WebSocket or stream routes; its idle_timeout also cuts
// an exchange that makes no progress for that long.
//
// Boost.Beast and Asio stay inside server.cc and internal/; this header names no Boost type.
//
// Thread-safety: Run() blocks the calling thread; Shutdown() and port() may be called from
// any thread, including from a handler.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/status.h"
#include "platform/http/http.h"
#include "platform/http/proxy.h"
#include "platform/http/stream.h"
#include "platform/http/websocket.h"

namespace gpunex::platform::http {

struct ServerOptions {
  // "host:port": an IP address ("0.0.0.0", "[::1]") or a resolvable name ("localhost").
  // Port 0 picks a free port (see Server::port()).
  std::string listen = "127.0.0.1:8080";
  size_t max_body_bytes = 1 << 20;
  size_t max_header_bytes = 16 * 1024;  // request line and header fields together
  int io_threads = 2;                   // threads running network event loops, one each
  int worker_threads = 8;               // threads running handlers
  int message_threads = 4;              // threads running WebSocket sessions' OnMessage and OnClose
  // A request (its headers and body) must arrive within this, counted from its first
  // byte, or from the connection's opening for the first request; also bounds a TLS
  // handshake and the writing of a response.
  std::chrono::seconds read_timeout{30};
  // A keep-alive connection with no request in progress is closed after this.
  std::chrono::seconds idle_timeout{60};
  // Open connections one client address may hold (HTTP and WebSocket alike); a connection
  // beyond is closed at once. 0: no limit. Agents behind one NAT address each hold one.
  int max_connections_per_address = 256;
  // On Shutdown(), requests in progress get this long to finish.
  std::chrono::seconds shutdown_grace{25};
  // Both set: serve HTTPS only, TLS 1.2 or newer. PEM files: the certificate chain (leaf
  // first) and its private key.
  std::string tls_cert_file;
  std::string tls_key_file;

  // WebSocket endpoints: exact request path ("/api/v1/agent/connect") -> acceptor.
  std::map<std::string, WebSocketAcceptor> websocket_routes;
  // A larger incoming message (all its frames together) closes the connection with 1009.
  size_t ws_max_message_bytes = 1 << 20;
  // The server pings every WebSocket connection this often, which keeps NAT mappings and
  // proxies open; a connection from which nothing (message, ping or pong) has arrived for
  // three intervals is dropped. read_timeout bounds the opening and the closing handshakes.
  std::chrono::seconds ws_ping_interval{20};

  // Streaming endpoints: exact request path -> route. While one streams, each read or
  // write of a piece of its body must complete within read_timeout, and the whole body
  // within stream_timeout (a 1 GiB body at 100 Mbit/s takes 86 s).
  std::map<std::string, StreamRoute> stream_routes;
  std::chrono::seconds stream_timeout{600};

  // Set: the server is a reverse proxy (proxy.h), for every request.
  ProxyAuthorizer proxy;
  // Proxied routes of an ordinary server: a path pattern ("/api/v1/rentals/{id}/files",
  // its {params} filled in the request) -> the authorizer of its requests (proxy.h). Their
  // bodies are never held in memory, and they bypass the Handler.
  std::map<std::string, ProxyAuthorizer> proxy_routes;
};

class Server {
 public:
  virtual ~Server() = default;

  // Binds and listens on options.listen (connections wait in the backlog until Run()).
  // `handler` runs on worker threads and must be thread-safe. Fails with
  // kInvalidArgument when the options are inconsistent or the TLS files cannot be
  // loaded, and kUnavailable when the address cannot be bound.
  static StatusOr<std::unique_ptr<Server>> Create(ServerOptions options, Handler handler);

  // The bound port: the real one when options.listen asked for port 0.
  virtual uint16_t port() const = 0;

  // Serves on io_threads threads (the calling thread is one of them) until a Shutdown()
  // has drained, then returns. REQUIRES: called at most once.
  virtual void Run() = 0;

  // Starts a graceful shutdown and returns once the listening socket is closed (new
  // connections are refused from then on), or at once when Run() is not serving.
  // The server then closes connections waiting between requests, lets requests in progress
  // finish and be answered with "Connection: close" for up to shutdown_grace, closes
  // WebSocket connections with 1001 "going away" (waiting, within the same grace, for their
  // OnClose), and makes Run() return. Handlers still running after the grace period keep
  // their worker thread; the destructor waits for them. Idempotent.
  virtual void Shutdown() = 0;
};

}  // namespace gpunex::platform::http
