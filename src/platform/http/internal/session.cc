// The HTTP session of one connection (see session.h). The request loop is a template over
// the stream type, shared by plain TCP and TLS.
#include "platform/http/internal/session.h"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "common/status.h"
#include "platform/http/internal/http_io.h"
#include "platform/http/internal/proxy_exchange.h"
#include "platform/http/internal/stream_transfer.h"
#include "platform/http/internal/websocket_connection.h"
#include "platform/http/router.h"

namespace gpunex::platform::http::internal {
namespace {

namespace websocket = boost::beast::websocket;

// Keeps a connection in the server's registry for the lifetime of its session.
class Registration {
 public:
  Registration(ServerState& state, std::shared_ptr<Connection> conn)
      : state_(state), conn_(std::move(conn)) {
    MutexLock lock(&state_.mu);
    state_.connections.insert(conn_);
  }
  ~Registration() {
    conn_->close = nullptr;
    conn_->going_away = nullptr;
    MutexLock lock(&state_.mu);
    state_.connections.erase(conn_);
  }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

 private:
  ServerState& state_;
  const std::shared_ptr<Connection> conn_;
};

Response InvokeHandler(const Handler& handler, Request& req) {
  return Guarded(
      req, [&] { return handler(req); },
      [] { return ErrorResponse(Internal("an internal error occurred")); });
}

// Waits, without a thread, until `d` has its answer (or the server stops waiting: then
// the answer is a 503). Resumes on the caller's strand.
asio::awaitable<void> Answered(ServerState& state, std::shared_ptr<Deferred> d) {
  {
    MutexLock lock(&state.mu);
    if (state.stopped_waiting) {
      d->Answer(ErrorResponse(Unavailable("the server is stopping")));
    } else {
      state.waiting.insert(d);
    }
  }
  auto initiate = [d](auto handler) {
    // The handler is move-only and std::function copies: it is shared, and called once.
    auto shared = std::make_shared<decltype(handler)>(std::move(handler));
    d->OnAnswer([shared] { asio::post(std::move(*shared)); });
  };
  co_await asio::async_initiate<decltype(asio::use_awaitable), void()>(std::move(initiate),
                                                                       asio::use_awaitable);
  MutexLock lock(&state.mu);
  state.waiting.erase(d);
}

asio::awaitable<Response> RunHandler(ServerState& state, std::shared_ptr<Request> req) {
  // The handler may block, so it runs on the pool; this coroutine resumes on its strand
  // when it is done. The pool's coroutine owns the request, so a handler that outlives
  // this session (the server stopped after the grace period) still has it.
  // The lambda and the operation are named rather than temporaries of the co_await
  // expression: GCC 12 destroys such temporaries twice.
  auto invoke = [&state, req]() -> asio::awaitable<Response> {
    co_return InvokeHandler(state.handler, *req);
  };
  auto on_pool = asio::co_spawn(state.pool, std::move(invoke), asio::use_awaitable);
  Response resp = co_await std::move(on_pool);
  // A deferred response: no thread waits for its answer; its Thens run on the pool.
  while (resp.deferred) {
    std::shared_ptr<Deferred> d = std::move(resp.deferred);
    auto answered = Answered(state, d);
    co_await std::move(answered);
    auto finish = [req, d]() -> asio::awaitable<Response> {
      co_return Guarded(
          *req, [&] { return d->Finish(); },
          [] { return ErrorResponse(Internal("an internal error occurred")); });
    };
    auto finishing = asio::co_spawn(state.pool, std::move(finish), asio::use_awaitable);
    resp = co_await std::move(finishing);
  }
  co_return resp;
}

template <typename Stream>
asio::awaitable<void> Serve(ServerState& state, Stream& stream, Connection& conn,
                            const std::string& remote) {
  constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  const ServerOptions& options = state.options;
  const std::atomic<bool>& draining = state.draining;
  beast::tcp_stream& tcp_stream = beast::get_lowest_layer(stream);
  beast::flat_buffer buffer;
  bool first = true;
  for (;;) {
    // Until the first byte of the next request arrives, the connection is idle: it
    // waits at most idle_timeout (read_timeout for the first request) and Shutdown() may
    // close it. A pipelined request already in the buffer skips the wait.
    if (buffer.size() == 0) {
      if (draining) co_return;
      conn.idle = true;
      tcp_stream.expires_after(first ? options.read_timeout : options.idle_timeout);
      auto [ec, n] = co_await stream.async_read_some(buffer.prepare(kReadChunk), kAwait);
      if (ec) co_return;
      buffer.commit(n);
    }
    conn.idle = false;
    first = false;

    tcp_stream.expires_after(options.read_timeout);
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(
        std::min<size_t>(options.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
    // The body limit depends on the route, known once the header is in: a stream route
    // has its own; other requests get max_body_bytes, checked against Content-Length
    // before any body byte is read and by the parser for a chunked body.
    parser.body_limit(boost::none);
    auto [hec, hn] = co_await bhttp::async_read_header(stream, buffer, parser, kAwait);
    if (!hec) {
      if (std::optional<std::string> problem = FramingProblem(parser.get())) {
        auto res = ToBeast(ProtocolErrorResponse(400, "bad_framing", *problem), 11, false, false);
        if (co_await WriteResponse(stream, res, options.read_timeout)) {
          co_await CloseConnection(stream, true);
        }
        co_return;
      }
      std::map<std::string, std::string> params;
      const ProxyAuthorizer* proxied =
          options.proxy ? &options.proxy : FindProxyRoute(options, parser.get().target(), &params);
      if (proxied != nullptr) {
        auto serving =
            ServeProxy(state, stream, buffer, parser, remote, *proxied, std::move(params));
        if (!co_await std::move(serving)) co_return;
        continue;
      }
      if (const StreamRoute* route = FindStreamRoute(options, parser.get().target())) {
        if (!co_await ServeStream(state, stream, buffer, parser, *route, remote)) co_return;
        continue;
      }
      if (parser.content_length().value_or(0) > options.max_body_bytes) {
        hec = bhttp::error::body_limit;
      } else {
        parser.body_limit(options.max_body_bytes);
      }
    }
    if (!hec && !parser.is_done()) {
      if (parser.get().version() >= 11 &&
          IEquals(parser.get()[bhttp::field::expect], "100-continue")) {
        bhttp::response<bhttp::empty_body> go_on{bhttp::status::continue_, 11};
        auto [cec, cn] = co_await bhttp::async_write(stream, go_on, kAwait);
        if (cec) co_return;
      }
      tcp_stream.expires_after(options.read_timeout);
      std::tie(hec, hn) = co_await bhttp::async_read(stream, buffer, parser, kAwait);
    }
    if (hec) {
      std::optional<Response> refusal = ReadErrorResponse(hec, options.max_body_bytes);
      if (!refusal) co_return;
      auto res = ToBeast(std::move(*refusal), 11, false, false);
      if (co_await WriteResponse(stream, res, options.read_timeout)) {
        co_await CloseConnection(stream, true);
      }
      co_return;
    }

    bhttp::request<bhttp::string_body> msg = parser.release();
    const unsigned version = msg.version();
    const bool head = msg.method() == bhttp::verb::head;
    bool keep_alive = msg.keep_alive();
    Status target_status;
    std::shared_ptr<Request> req = ToRequest(msg, remote, kTls, &target_status);
    Response resp;
    auto ws_route = options.websocket_routes.end();
    if (target_status.ok()) {
      ws_route = options.websocket_routes.find(req->path);
      // Then the pattern routes ("/api/v1/rentals/{id}/ports/{port}/connect").
      for (auto it = options.websocket_routes.begin();
           ws_route == options.websocket_routes.end() && it != options.websocket_routes.end();
           ++it) {
        if (it->first.find('{') != std::string::npos &&
            MatchPattern(it->first, req->path, &req->params)) {
          ws_route = it;
        }
      }
    }
    if (!target_status.ok()) {
      resp = ErrorResponse(target_status);
    } else if (ws_route == options.websocket_routes.end()) {
      resp = co_await RunHandler(state, std::move(req));
    } else if (!websocket::is_upgrade(msg)) {
      resp = ProtocolErrorResponse(426, "upgrade_required",
                                   "this endpoint only accepts WebSocket connections");
      resp.SetHeader("Upgrade", "websocket");
    } else if (buffer.size() != 0) {
      // The client must wait for the handshake's answer before sending frames; bytes
      // already buffered here would be lost to the WebSocket stream.
      resp = ErrorResponse(InvalidArgument("data followed the WebSocket upgrade request"));
      keep_alive = false;
    } else if (draining) {
      resp = ErrorResponse(Unavailable("the server is shutting down"));
    } else {
      req->route = ws_route->first;
      auto ws_conn =
          std::make_shared<WsConnection>(conn.executor, state.message_pool.get_executor(), remote);
      auto accepting = RunAcceptor(state, ws_route->second, req, ws_conn);
      auto [status, session] = co_await std::move(accepting);
      if (status.ok()) {
        ws_conn->Start(std::move(session));
        co_await ServeWebSocket(state, stream, conn, msg, std::move(ws_conn));
        co_return;
      }
      ws_conn->Detach();
      resp = ErrorResponse(status);
    }
    keep_alive = keep_alive && !draining && !IEquals(resp.GetHeader("Connection"), "close");
    auto res = ToBeast(std::move(resp), version, keep_alive, head);
    if (!co_await WriteResponse(stream, res, options.read_timeout)) co_return;
    if (!keep_alive) {
      co_await CloseConnection(stream, false);
      co_return;
    }
  }
}

}  // namespace

asio::awaitable<void> ServeConnection(ServerState& state, tcp::socket socket) {
  error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  const std::string remote = ec ? std::string() : peer.address().to_string();
  auto conn = std::make_shared<Connection>(socket.get_executor());
  Registration registration(state, conn);
  if (state.draining) co_return;

  // `conn->close` refers to the stream: the Registration (declared first, destroyed
  // last) clears it, and nothing runs on this strand in between.
  if (state.tls == nullptr) {
    PlainStream stream(std::move(socket));
    conn->close = [&stream] {
      error_code ignored;
      stream.socket().close(ignored);
    };
    co_await Serve(state, stream, *conn, remote);
  } else {
    TlsStream stream(std::move(socket), *state.tls);
    conn->close = [&stream] {
      error_code ignored;
      beast::get_lowest_layer(stream).socket().close(ignored);
    };
    beast::get_lowest_layer(stream).expires_after(state.options.read_timeout);
    auto [hs_ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, kAwait);
    if (!hs_ec) co_await Serve(state, stream, *conn, remote);
  }
}

}  // namespace gpunex::platform::http::internal
