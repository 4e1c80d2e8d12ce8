// ServerState: what the HTTP server (server.cc) shares with the sessions of its
// connections (session.h and the WebSocket and stream code they hand over to): the
// options, the handler and the TLS context, the event loops (one io_context per I/O
// thread) and the worker pool, the draining flag, and the registry of open connections
// that Shutdown() walks. Also the Asio vocabulary of the implementation files and the two
// helpers they use to keep failures from escaping: LogIfFailed for detached coroutines,
// Guarded for calls into application code.
//
// This header names Asio but not Beast, so that server.cc (the acceptor and the loops)
// compiles without Beast; the files that speak HTTP include http_io.h.
//
// Thread-safety: the const members are immutable after construction; `pool` is
// thread-safe; `draining` is atomic; `connections` is guarded by `mu`. A Connection is
// confined to its connection's strand (see below). ServerState must outlive every
// coroutine and pool task of the server: its members are destroyed in reverse order, the
// pool first (waiting for handlers still running), then the loops with the suspended
// coroutines, whose cleanup uses `mu`, `connections` and `tls`.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <functional>
#include <memory>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/thread_annotations.h"
#include "platform/http/http.h"
#include "platform/http/server.h"

namespace gpunex::platform::http::internal {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

// Completion token for the server's I/O: results come back as (error_code, ...) tuples,
// so network errors are values, not exceptions.
inline constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);

// The state of one connection that Shutdown() needs. Except for `executor`, members are
// touched only on the connection's strand (`executor`), or by Run() after the I/O threads
// have stopped.
struct Connection {
  explicit Connection(asio::any_io_executor ex) : executor(std::move(ex)) {}
  const asio::any_io_executor executor;
  bool idle = true;             // no request in progress: Shutdown() may close it
  std::function<void()> close;  // closes the socket; empty when there is none
  // Starts closing a WebSocket connection with 1001; empty unless one is open.
  std::function<void()> going_away;
};

struct ServerState {
  // Creates options.io_threads loops (at least one) and starts options.worker_threads pool
  // threads. Defined in server.cc.
  ServerState(ServerOptions options, Handler handler, std::unique_ptr<asio::ssl::context> tls);
  ServerState(const ServerState&) = delete;
  ServerState& operator=(const ServerState&) = delete;

  const ServerOptions options;
  const Handler handler;
  const std::unique_ptr<asio::ssl::context> tls;  // null: plain HTTP

  Mutex mu;
  std::set<std::shared_ptr<Connection>> connections GUARDED_BY(mu);
  // Open connections per client address (options.max_connections_per_address).
  std::map<std::string, int> per_address GUARDED_BY(mu);
  // Set (under mu) when Shutdown() starts draining: no new requests on any connection.
  std::atomic<bool> draining{false};
  // Deferred responses (Response::Defer) whose answer a session waits for. When the
  // shutdown's grace period is over, those still waiting are answered 503, and so is any
  // that would start waiting afterwards (`stopped_waiting`).
  std::set<std::shared_ptr<Deferred>> waiting GUARDED_BY(mu);
  bool stopped_waiting GUARDED_BY(mu) = false;

  // One per I/O thread; the first also runs the acceptor.
  const std::vector<std::unique_ptr<asio::io_context>> loops;
  asio::thread_pool pool;  // runs handlers, acceptors, authorizers and deferred answers' Thens
  // Runs the WebSocket sessions' OnMessage/OnClose (agents' heartbeats among them), so
  // that they never queue behind request handlers, nor handlers behind them.
  asio::thread_pool message_pool;
};

// Logs the exception that ended a detached coroutine, if any.
inline void LogIfFailed(std::exception_ptr e, std::string_view what) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    LogError("http.coroutine_failed", {{"coroutine", what}, {"error", ex.what()}});
  } catch (...) {
    LogError("http.coroutine_failed", {{"coroutine", what}, {"error", "unknown exception"}});
  }
}

// Calls application code (a handler, an acceptor, an authorizer) for `req` and returns
// its result; an exception it throws is logged as the request's and `failed()` is
// returned instead.
template <typename Call, typename Failed>
auto Guarded(const Request& req, Call call, Failed failed) -> decltype(call()) {
  try {
    return call();
  } catch (const std::exception& e) {
    LogError("http.handler_exception",
             {{"method", req.method}, {"path", req.path}, {"error", e.what()}});
  } catch (...) {
    LogError("http.handler_exception",
             {{"method", req.method}, {"path", req.path}, {"error", "unknown exception"}});
  }
  return failed();
}

}  // namespace gpunex::platform::http::internal
