// The HTTP server on Boost.Asio with C++20 coroutines: the listening socket, one event
// loop (io_context) per I/O thread, the worker pool, and the graceful shutdown. Requests
// are the business of the session (internal/session.h): this file compiles without Beast,
// which only the three files of internal/ that speak HTTP include.
//
// Shape: one event loop per I/O thread, each run by that thread alone; one acceptor
// coroutine on the first loop, handing each accepted connection to the loops in turn; one
// session coroutine per connection on a strand of its own (so a connection's state needs
// no lock), which stays on its loop's thread; handlers run on a thread pool and the
// session waits for them without blocking an I/O thread. (One io_context shared by all I/O
// threads hands every completion from the thread that saw it to another: on a bulk
// transfer that costs more CPU than the transfer itself.)
#include "platform/http/server.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/thread_annotations.h"
#include "platform/http/internal/server_state.h"
#include "platform/http/internal/session.h"

namespace gpunex::platform::http {
namespace internal {
namespace {

asio::awaitable<void> ServeCounted(ServerState& state, tcp::socket socket, std::string address);

using namespace std::chrono_literals;

std::vector<std::unique_ptr<asio::io_context>> MakeLoops(int n) {
  std::vector<std::unique_ptr<asio::io_context>> loops;
  // Each loop is run by one thread only (the concurrency hint).
  for (int i = 0; i < std::max(n, 1); ++i) loops.push_back(std::make_unique<asio::io_context>(1));
  return loops;
}

// Splits "host:port" and "[v6]:port".
Status SplitHostPort(std::string_view listen, std::string* host, std::string* port) {
  std::string_view h, p;
  if (!listen.empty() && listen.front() == '[') {
    size_t close = listen.find(']');
    if (close == std::string_view::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return InvalidArgument("listen address must be host:port or [ipv6]:port");
    }
    h = listen.substr(1, close - 1);
    p = listen.substr(close + 2);
  } else {
    size_t colon = listen.rfind(':');
    if (colon == std::string_view::npos) {
      return InvalidArgument("listen address must be host:port or [ipv6]:port");
    }
    h = listen.substr(0, colon);
    p = listen.substr(colon + 1);
  }
  if (p.empty() || p.size() > 5 ||
      !std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(std::string(p)) > 65535) {
    return InvalidArgument("listen address has a bad port: " + std::string(listen));
  }
  *host = std::string(h);
  *port = std::string(p);
  return Status::Ok();
}

StatusOr<std::unique_ptr<asio::ssl::context>> MakeTlsContext(const ServerOptions& options) {
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
  error_code ec;
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use,
                   ec);
  if (ec || SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION) != 1) {
    return InvalidArgument("cannot configure TLS: " + ec.message());
  }
  ctx->use_certificate_chain_file(options.tls_cert_file, ec);
  if (ec) {
    return InvalidArgument("cannot load the TLS certificate " + options.tls_cert_file + ": " +
                           ec.message());
  }
  ctx->use_private_key_file(options.tls_key_file, asio::ssl::context::pem, ec);
  if (ec) {
    return InvalidArgument("cannot load the TLS key " + options.tls_key_file + ": " + ec.message());
  }
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    return InvalidArgument("the TLS key does not match the certificate");
  }
  return ctx;
}

class ServerImpl final : public Server {
 public:
  ServerImpl(ServerOptions options, Handler handler, std::unique_ptr<asio::ssl::context> tls)
      : state_(std::move(options), std::move(handler), std::move(tls)),
        acceptor_(asio::make_strand(*state_.loops[0])) {}

  // The acceptor goes first, then the state: its pool (waiting for handlers still
  // running), then its loops and the suspended coroutines (server_state.h).
  ~ServerImpl() override = default;

  Status Listen();

  uint16_t port() const override { return port_; }
  void Run() override;
  void Shutdown() override;

 private:
  void RunEventLoop(asio::io_context& ioc);
  asio::awaitable<void> AcceptLoop();
  asio::awaitable<void> Drain(std::shared_ptr<std::promise<void>> stopped_listening);

  ServerState state_;
  std::atomic<bool> shutdown_called_{false};
  std::atomic<bool> serving_{false};  // Run() is running the event loop
  uint16_t port_ = 0;
  size_t next_loop_ = 0;    // the loop of the next connection; used only on the acceptor's strand
  tcp::acceptor acceptor_;  // used only on its strand
};

Status ServerImpl::Listen() {
  std::string host, port;
  GPUNEX_RETURN_IF_ERROR(SplitHostPort(state_.options.listen, &host, &port));
  error_code ec;
  tcp::resolver resolver(*state_.loops[0]);
  auto results = resolver.resolve(host, port, tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    return InvalidArgument("cannot resolve the listen address " + state_.options.listen + ": " +
                           ec.message());
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Unavailable("cannot listen on " + state_.options.listen + ": " + ec.message());
  port_ = acceptor_.local_endpoint(ec).port();
  return Status::Ok();
}

void ServerImpl::Run() {
  serving_ = true;
  asio::co_spawn(acceptor_.get_executor(), AcceptLoop(),
                 [](std::exception_ptr e) { LogIfFailed(e, "accept"); });
  // Loops without a connection yet must not return: they run until Drain stops them.
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> keep;
  for (const auto& ioc : state_.loops) keep.push_back(asio::make_work_guard(*ioc));
  std::vector<std::thread> threads;
  for (size_t i = 1; i < state_.loops.size(); ++i) {
    threads.emplace_back([this, i] { RunEventLoop(*state_.loops[i]); });
  }
  RunEventLoop(*state_.loops[0]);
  for (std::thread& t : threads) t.join();
  serving_ = false;
  // The event loop has stopped, so nothing else touches the connections: close those that
  // outlived the grace period. Their coroutines are destroyed with the server.
  MutexLock lock(&state_.mu);
  for (const auto& conn : state_.connections) {
    if (conn->close) conn->close();
  }
}

void ServerImpl::RunEventLoop(asio::io_context& ioc) {
  for (;;) {
    try {
      ioc.run();
      return;
    } catch (const std::exception& e) {
      LogError("http.event_loop_exception", {{"error", e.what()}});
    }
  }
}

void ServerImpl::Shutdown() {
  if (shutdown_called_.exchange(true)) return;
  auto stopped_listening = std::make_shared<std::promise<void>>();
  std::future<void> done = stopped_listening->get_future();
  asio::co_spawn(acceptor_.get_executor(), Drain(std::move(stopped_listening)),
                 [](std::exception_ptr e) { LogIfFailed(e, "drain"); });
  // Without a running event loop the drain runs when Run() starts; do not wait for it.
  // The bound on the wait only matters if the I/O threads are wedged.
  if (serving_) done.wait_for(10s);
}

asio::awaitable<void> ServerImpl::Drain(std::shared_ptr<std::promise<void>> stopped_listening) {
  // On the acceptor's strand.
  error_code ignored;
  acceptor_.close(ignored);
  stopped_listening->set_value();
  {
    MutexLock lock(&state_.mu);
    // Under mu: a session registered after this sees state_.draining and leaves by itself.
    state_.draining = true;
    for (const auto& conn : state_.connections) {
      asio::post(conn->executor, [conn] {
        if (conn->idle && conn->close) {
          conn->close();
        } else if (conn->going_away) {
          conn->going_away();
        }
      });
    }
  }
  asio::steady_timer timer(co_await asio::this_coro::executor);
  // Until every connection has closed or `deadline`; false at the deadline.
  auto closed_by = [&](std::chrono::steady_clock::time_point deadline) -> asio::awaitable<bool> {
    for (;;) {
      size_t open;
      {
        MutexLock lock(&state_.mu);
        open = state_.connections.size();
      }
      if (open == 0) co_return true;
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        LogWarn("http.shutdown_grace_expired", {{"open_connections", open}});
        co_return false;
      }
      timer.expires_after(std::min<std::chrono::steady_clock::duration>(10ms, deadline - now));
      co_await timer.async_wait(kAwait);
    }
  };
  auto in_grace = closed_by(std::chrono::steady_clock::now() + state_.options.shutdown_grace);
  if (!co_await std::move(in_grace)) {
    // Deferred answers that did not come within the grace period will not: those
    // requests are answered 503, which takes the sessions a moment to write.
    std::set<std::shared_ptr<Deferred>> waiting;
    {
      MutexLock lock(&state_.mu);
      state_.stopped_waiting = true;
      waiting.swap(state_.waiting);
    }
    for (const auto& d : waiting) d->Answer(ErrorResponse(Unavailable("the server is stopping")));
    if (!waiting.empty()) {
      auto written = closed_by(std::chrono::steady_clock::now() + 1s);
      co_await std::move(written);
    }
  }
  for (const auto& ioc : state_.loops) ioc->stop();
}

asio::awaitable<void> ServerImpl::AcceptLoop() {
  for (;;) {
    // Each connection gets its own strand on the next loop; any_io_executor so sockets
    // are tcp::socket.
    asio::any_io_executor strand =
        asio::make_strand(*state_.loops[next_loop_++ % state_.loops.size()]);
    auto [ec, socket] = co_await acceptor_.async_accept(strand, kAwait);
    if (ec) {
      if (state_.draining || ec == asio::error::operation_aborted || !acceptor_.is_open())
        co_return;
      // Usually out of file descriptors: back off instead of spinning.
      LogWarn("http.accept_failed", {{"error", ec.message()}});
      asio::steady_timer pause(co_await asio::this_coro::executor, 50ms);
      co_await pause.async_wait(kAwait);
      continue;
    }
    error_code peer_ec;
    // Small messages (a WebSocket's credit frames, a response's last bytes) go out at
    // once instead of waiting on Nagle's algorithm for the peer's delayed ACK (40 ms).
    socket.set_option(tcp::no_delay(true), peer_ec);
    const tcp::endpoint peer = socket.remote_endpoint(peer_ec);
    std::string address = peer_ec ? std::string() : peer.address().to_string();
    {
      MutexLock lock(&state_.mu);
      int& open = state_.per_address[address];
      if (state_.options.max_connections_per_address > 0 &&
          open >= state_.options.max_connections_per_address) {
        socket.close(peer_ec);
        continue;
      }
      ++open;
    }
    asio::co_spawn(strand, ServeCounted(state_, std::move(socket), std::move(address)),
                   [](std::exception_ptr e) { LogIfFailed(e, "session"); });
  }
}

// Serves the connection, then gives its address's place back.
asio::awaitable<void> ServeCounted(ServerState& state, tcp::socket socket, std::string address) {
  struct Release {
    ServerState& state;
    std::string address;
    ~Release() {
      MutexLock lock(&state.mu);
      auto it = state.per_address.find(address);
      if (it != state.per_address.end() && --it->second <= 0) state.per_address.erase(it);
    }
  } release{state, std::move(address)};
  co_await ServeConnection(state, std::move(socket));
}

}  // namespace

ServerState::ServerState(ServerOptions options_in, Handler handler_in,
                         std::unique_ptr<asio::ssl::context> tls_in)
    : options(std::move(options_in)),
      handler(std::move(handler_in)),
      tls(std::move(tls_in)),
      loops(MakeLoops(options.io_threads)),
      pool(static_cast<size_t>(options.worker_threads)),
      message_pool(static_cast<size_t>(options.message_threads)) {}

}  // namespace internal

StatusOr<std::unique_ptr<Server>> Server::Create(ServerOptions options, Handler handler) {
  if (!handler) return InvalidArgument("the server needs a handler");
  if (options.io_threads < 1 || options.worker_threads < 1 || options.message_threads < 1) {
    return InvalidArgument("io_threads, worker_threads and message_threads must be at least 1");
  }
  if (options.max_body_bytes == 0 || options.max_header_bytes == 0) {
    return InvalidArgument("max_body_bytes and max_header_bytes must be positive");
  }
  if (options.read_timeout.count() <= 0 || options.idle_timeout.count() <= 0 ||
      options.shutdown_grace.count() < 0) {
    return InvalidArgument("timeouts must be positive");
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return InvalidArgument("TLS needs both tls_cert_file and tls_key_file");
  }
  if (options.ws_max_message_bytes == 0 || options.ws_ping_interval.count() <= 0) {
    return InvalidArgument("ws_max_message_bytes and ws_ping_interval must be positive");
  }
  for (const auto& [path, acceptor] : options.websocket_routes) {
    if (!acceptor) return InvalidArgument("the WebSocket route " + path + " has no acceptor");
  }
  for (const auto& [path, route] : options.stream_routes) {
    if (!route.authorize) return InvalidArgument("the stream route " + path + " has no authorizer");
    if (options.websocket_routes.contains(path)) {
      return InvalidArgument("the path " + path + " is both a WebSocket and a stream route");
    }
  }
  if (options.stream_timeout.count() <= 0) return InvalidArgument("timeouts must be positive");
  try {
    std::unique_ptr<internal::asio::ssl::context> tls;
    if (!options.tls_cert_file.empty()) {
      GPUNEX_ASSIGN_OR_RETURN(tls, internal::MakeTlsContext(options));
    }
    const bool use_tls = tls != nullptr;
    const std::string listen = options.listen;
    auto server = std::make_unique<internal::ServerImpl>(std::move(options), std::move(handler),
                                                         std::move(tls));
    GPUNEX_RETURN_IF_ERROR(server->Listen());
    LogInfo("http.listening", {{"listen", listen}, {"port", server->port()}, {"tls", use_tls}});
    return std::unique_ptr<Server>(std::move(server));
  } catch (const std::exception& e) {
    // Thread creation or the TLS library failed.
    return Internal(std::string("cannot start the HTTP server: ") + e.what());
  }
}

}  // namespace gpunex::platform::http
