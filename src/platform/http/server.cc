// The HTTP server on Boost.Beast and Asio with C++20 coroutines. This is the only file of
// gpunex that includes Beast or Asio: keep it that way, so that the rest of the platform
// compiles quickly and knows nothing of sockets.
//
// Shape: one acceptor coroutine on its own strand; one session coroutine per connection
// on a strand of its own (so a connection's state needs no lock); handlers run on a
// thread pool and the session waits for them without blocking an I/O thread. The session
// coroutine is a template over the stream type, shared by plain TCP and TLS.
#include "platform/http/server.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <exception>
#include <functional>
#include <future>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/log.h"

namespace gpunex::platform::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

// Completion token for the session's I/O: results come back as (error_code, ...) tuples,
// so network errors are values, not exceptions.
constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);

using PlainStream = beast::tcp_stream;
using TlsStream = asio::ssl::stream<beast::tcp_stream>;

// How long a closing connection may take to say goodbye: the TLS close_notify exchange,
// or reading (and discarding) the rest of a request that was refused.
constexpr auto kCloseTimeout = 2s;
constexpr size_t kReadChunk = 8192;

// Logs the exception that ended a detached coroutine, if any.
void LogIfFailed(std::exception_ptr e, std::string_view what) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    LogError("http.coroutine_failed", {{"coroutine", what}, {"error", ex.what()}});
  } catch (...) {
    LogError("http.coroutine_failed", {{"coroutine", what}, {"error", "unknown exception"}});
  }
}

bool IEquals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

// A header a handler may send: a token name and a value without CR, LF or NUL (which
// would let a value smuggle in headers of its own).
bool IsSafeHeader(std::string_view name, std::string_view value) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) ||
          std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos)) {
      return false;
    }
  }
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
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

// The Beast response for a handler's Response. The server owns framing: handler headers
// named Content-Length, Transfer-Encoding or Connection are dropped.
bhttp::response<bhttp::string_body> ToBeast(Response resp, unsigned version, bool keep_alive,
                                            bool head) {
  if (resp.status < 200 || resp.status > 599) {
    LogError("http.bad_response_status", {{"status", resp.status}});
    resp = ErrorResponse(Internal("an internal error occurred"));
  }
  bhttp::response<bhttp::string_body> res;
  res.version(version);
  res.result(static_cast<unsigned>(resp.status));
  for (const auto& [name, value] : resp.headers) {
    if (!IsSafeHeader(name, value)) {
      LogError("http.bad_response_header", {{"name", name}});
      continue;
    }
    if (IEquals(name, "Content-Length") || IEquals(name, "Transfer-Encoding") ||
        IEquals(name, "Connection")) {
      continue;
    }
    res.insert(name, value);
  }
  // 204 and 304 carry neither a body nor a Content-Length.
  if (resp.status != 204 && resp.status != 304) {
    res.body() = std::move(resp.body);
    res.prepare_payload();
    if (head) res.body().clear();  // keeps the Content-Length of the GET answer
  }
  res.keep_alive(keep_alive);
  return res;
}

// The request value handlers see. `target_status` receives the result of parsing the
// target; the request is only dispatched when it is OK.
std::shared_ptr<Request> ToRequest(bhttp::request<bhttp::string_body>&& msg,
                                   const std::string& remote_addr, bool tls,
                                   Status* target_status) {
  auto req = std::make_shared<Request>();
  req->method = std::string(msg.method_string());
  req->target = std::string(msg.target());
  *target_status = ParseTarget(req->target, &req->path, &req->query);
  for (const auto& field : msg) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto [it, inserted] = req->headers.try_emplace(std::move(name), field.value());
    if (!inserted) {
      // RFC 7230 section 3.2.2 folds repeats with ","; RFC 6265 joins cookies with ";".
      it->second += it->first == "cookie" ? "; " : ", ";
      it->second += field.value();
    }
  }
  req->body = std::move(msg.body());
  req->remote_addr = remote_addr;
  req->tls = tls;
  return req;
}

// The state of one connection that Shutdown() needs. Except for `executor`, members are
// touched only on the connection's strand (`executor`), or by Run() after the I/O threads
// have stopped.
struct Connection {
  explicit Connection(asio::any_io_executor ex) : executor(std::move(ex)) {}
  const asio::any_io_executor executor;
  bool idle = true;             // no request in progress: Shutdown() may close it
  std::function<void()> close;  // closes the socket; empty when there is none
};

class ServerImpl final : public Server {
 public:
  ServerImpl(ServerOptions options, Handler handler, std::unique_ptr<asio::ssl::context> tls)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        tls_(std::move(tls)),
        ioc_(options_.io_threads),
        acceptor_(asio::make_strand(ioc_)),
        pool_(static_cast<size_t>(options_.worker_threads)) {}

  // Members are destroyed in reverse order: the pool first (waiting for handlers still
  // running), then the I/O objects and the suspended coroutines, whose cleanup uses
  // mu_, connections_ and tls_.
  ~ServerImpl() override = default;

  Status Listen();

  uint16_t port() const override { return port_; }
  void Run() override;
  void Shutdown() override;

 private:
  // Keeps a connection in connections_ for the lifetime of its session.
  class Registration {
   public:
    Registration(ServerImpl* server, std::shared_ptr<Connection> conn)
        : server_(server), conn_(std::move(conn)) {
      std::lock_guard<std::mutex> lock(server_->mu_);
      server_->connections_.insert(conn_);
    }
    ~Registration() {
      conn_->close = nullptr;
      std::lock_guard<std::mutex> lock(server_->mu_);
      server_->connections_.erase(conn_);
    }
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;

   private:
    ServerImpl* const server_;
    const std::shared_ptr<Connection> conn_;
  };

  void RunEventLoop();
  asio::awaitable<void> AcceptLoop();
  asio::awaitable<void> Session(tcp::socket socket);
  template <typename Stream>
  asio::awaitable<void> Serve(Stream& stream, Connection& conn, const std::string& remote);
  template <typename Stream>
  asio::awaitable<bool> Write(Stream& stream, bhttp::response<bhttp::string_body>& res);
  template <typename Stream>
  asio::awaitable<void> Close(Stream& stream, bool discard_input);
  // The answer to a failed read of a request, or nullopt when there is none to give
  // (the peer left, the read timed out, the server closed the connection).
  std::optional<Response> ReadErrorResponse(const error_code& ec) const;
  asio::awaitable<Response> RunHandler(std::shared_ptr<Request> req);
  Response InvokeHandler(Request& req) const;
  asio::awaitable<void> Drain(std::shared_ptr<std::promise<void>> stopped_listening);

  const ServerOptions options_;
  const Handler handler_;
  const std::unique_ptr<asio::ssl::context> tls_;  // null: plain HTTP

  std::mutex mu_;
  std::set<std::shared_ptr<Connection>> connections_;  // GUARDED_BY(mu_)
  // Set (under mu_) when Shutdown() starts draining: no new requests on any connection.
  std::atomic<bool> draining_{false};
  std::atomic<bool> shutdown_called_{false};
  std::atomic<bool> serving_{false};  // Run() is running the event loop
  uint16_t port_ = 0;

  asio::io_context ioc_;
  tcp::acceptor acceptor_;  // used only on its strand
  asio::thread_pool pool_;  // runs handlers
};

Status ServerImpl::Listen() {
  std::string host, port;
  GPUNEX_RETURN_IF_ERROR(SplitHostPort(options_.listen, &host, &port));
  error_code ec;
  tcp::resolver resolver(ioc_);
  auto results = resolver.resolve(host, port, tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    return InvalidArgument("cannot resolve the listen address " + options_.listen + ": " +
                           ec.message());
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Unavailable("cannot listen on " + options_.listen + ": " + ec.message());
  port_ = acceptor_.local_endpoint(ec).port();
  return Status::Ok();
}

void ServerImpl::Run() {
  serving_ = true;
  asio::co_spawn(acceptor_.get_executor(), AcceptLoop(),
                 [](std::exception_ptr e) { LogIfFailed(e, "accept"); });
  std::vector<std::thread> threads;
  for (int i = 1; i < options_.io_threads; ++i) threads.emplace_back([this] { RunEventLoop(); });
  RunEventLoop();
  for (std::thread& t : threads) t.join();
  serving_ = false;
  // The event loop has stopped, so nothing else touches the connections: close those that
  // outlived the grace period. Their coroutines are destroyed with the server.
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& conn : connections_) {
    if (conn->close) conn->close();
  }
}

void ServerImpl::RunEventLoop() {
  for (;;) {
    try {
      ioc_.run();
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
    std::lock_guard<std::mutex> lock(mu_);
    // Under mu_: a session registered after this sees draining_ and leaves by itself.
    draining_ = true;
    for (const auto& conn : connections_) {
      asio::post(conn->executor, [conn] {
        if (conn->idle && conn->close) conn->close();
      });
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.shutdown_grace;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    size_t open;
    {
      std::lock_guard<std::mutex> lock(mu_);
      open = connections_.size();
    }
    if (open == 0) break;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      LogWarn("http.shutdown_grace_expired", {{"open_connections", open}});
      break;
    }
    timer.expires_after(std::min<std::chrono::steady_clock::duration>(10ms, deadline - now));
    co_await timer.async_wait(kAwait);
  }
  ioc_.stop();
}

asio::awaitable<void> ServerImpl::AcceptLoop() {
  for (;;) {
    // Each connection gets its own strand; any_io_executor so sockets are tcp::socket.
    asio::any_io_executor strand = asio::make_strand(ioc_);
    auto [ec, socket] = co_await acceptor_.async_accept(strand, kAwait);
    if (ec) {
      if (draining_ || ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
      // Usually out of file descriptors: back off instead of spinning.
      LogWarn("http.accept_failed", {{"error", ec.message()}});
      asio::steady_timer pause(co_await asio::this_coro::executor, 50ms);
      co_await pause.async_wait(kAwait);
      continue;
    }
    asio::co_spawn(strand, Session(std::move(socket)),
                   [](std::exception_ptr e) { LogIfFailed(e, "session"); });
  }
}

asio::awaitable<void> ServerImpl::Session(tcp::socket socket) {
  error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  const std::string remote = ec ? std::string() : peer.address().to_string();
  auto conn = std::make_shared<Connection>(socket.get_executor());
  Registration registration(this, conn);
  if (draining_) co_return;

  // `conn->close` refers to the stream: the Registration (declared first, destroyed
  // last) clears it, and nothing runs on this strand in between.
  if (tls_ == nullptr) {
    PlainStream stream(std::move(socket));
    conn->close = [&stream] {
      error_code ignored;
      stream.socket().close(ignored);
    };
    co_await Serve(stream, *conn, remote);
  } else {
    TlsStream stream(std::move(socket), *tls_);
    conn->close = [&stream] {
      error_code ignored;
      beast::get_lowest_layer(stream).socket().close(ignored);
    };
    beast::get_lowest_layer(stream).expires_after(options_.read_timeout);
    auto [hs_ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, kAwait);
    if (!hs_ec) co_await Serve(stream, *conn, remote);
  }
}

template <typename Stream>
asio::awaitable<void> ServerImpl::Serve(Stream& stream, Connection& conn,
                                        const std::string& remote) {
  constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  beast::tcp_stream& tcp_stream = beast::get_lowest_layer(stream);
  beast::flat_buffer buffer;
  bool first = true;
  for (;;) {
    // Until the first byte of the next request arrives, the connection is idle: it
    // waits at most idle_timeout (read_timeout for the first request) and Shutdown() may
    // close it. A pipelined request already in the buffer skips the wait.
    if (buffer.size() == 0) {
      if (draining_) co_return;
      conn.idle = true;
      tcp_stream.expires_after(first ? options_.read_timeout : options_.idle_timeout);
      auto [ec, n] = co_await stream.async_read_some(buffer.prepare(kReadChunk), kAwait);
      if (ec) co_return;
      buffer.commit(n);
    }
    conn.idle = false;
    first = false;

    tcp_stream.expires_after(options_.read_timeout);
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(
        std::min<size_t>(options_.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
    // Also refuses a larger Content-Length as soon as the header is parsed.
    parser.body_limit(options_.max_body_bytes);
    auto [hec, hn] = co_await bhttp::async_read_header(stream, buffer, parser, kAwait);
    // Extension point for the agent channel: a WebSocket upgrade (GET
    // /api/v1/agent/connect with "Upgrade: websocket", beast::websocket::is_upgrade) is
    // recognised here, once the header is read and before any body: authenticate it
    // (a hook beside handler_), then hand `stream`, `buffer` and parser.release() to a
    // WebSocket session (beast::websocket::stream<Stream&>) running on this strand, and
    // return from Serve when it ends. The connection counts as busy meanwhile, so the
    // session should end itself once draining_ is set, or Shutdown() waits out its grace.
    if (!hec && !parser.is_done()) {
      if (parser.get().version() >= 11 &&
          IEquals(parser.get()[bhttp::field::expect], "100-continue")) {
        bhttp::response<bhttp::empty_body> go_on{bhttp::status::continue_, 11};
        auto [cec, cn] = co_await bhttp::async_write(stream, go_on, kAwait);
        if (cec) co_return;
      }
      tcp_stream.expires_after(options_.read_timeout);
      std::tie(hec, hn) = co_await bhttp::async_read(stream, buffer, parser, kAwait);
    }
    if (hec) {
      std::optional<Response> refusal = ReadErrorResponse(hec);
      if (!refusal) co_return;
      auto res = ToBeast(std::move(*refusal), 11, false, false);
      if (co_await Write(stream, res)) co_await Close(stream, true);
      co_return;
    }

    bhttp::request<bhttp::string_body> msg = parser.release();
    const unsigned version = msg.version();
    const bool head = msg.method() == bhttp::verb::head;
    bool keep_alive = msg.keep_alive();
    Status target_status;
    std::shared_ptr<Request> req = ToRequest(std::move(msg), remote, kTls, &target_status);
    Response resp;
    if (target_status.ok()) {
      resp = co_await RunHandler(std::move(req));
    } else {
      resp = ErrorResponse(target_status);
    }
    keep_alive = keep_alive && !draining_ && !IEquals(resp.GetHeader("Connection"), "close");
    auto res = ToBeast(std::move(resp), version, keep_alive, head);
    if (!co_await Write(stream, res)) co_return;
    if (!keep_alive) {
      co_await Close(stream, false);
      co_return;
    }
  }
}

template <typename Stream>
asio::awaitable<bool> ServerImpl::Write(Stream& stream, bhttp::response<bhttp::string_body>& res) {
  beast::get_lowest_layer(stream).expires_after(options_.read_timeout);
  auto [ec, n] = co_await bhttp::async_write(stream, res, kAwait);
  co_return !ec;
}

template <typename Stream>
asio::awaitable<void> ServerImpl::Close(Stream& stream, bool discard_input) {
  beast::tcp_stream& tcp_stream = beast::get_lowest_layer(stream);
  tcp_stream.expires_after(kCloseTimeout);
  if constexpr (std::is_same_v<Stream, TlsStream>) {
    [[maybe_unused]] auto [ec] = co_await stream.async_shutdown(kAwait);
  } else {
    error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (discard_input && !ec) {
      // Closing with unread input makes the kernel send a reset, which can destroy the
      // error response before the client has read it: drain briefly first.
      std::array<char, kReadChunk> scratch;
      for (;;) {
        auto [rec, n] = co_await stream.async_read_some(asio::buffer(scratch), kAwait);
        if (rec) break;
      }
    }
  }
}

std::optional<Response> ServerImpl::ReadErrorResponse(const error_code& ec) const {
  if (ec == bhttp::error::body_limit) {
    return ErrorResponse(Status(
        StatusCode::kPayloadTooLarge, "the request body is too large",
        {{"body", "must be at most " + std::to_string(options_.max_body_bytes) + " bytes"}}));
  }
  if (ec == bhttp::error::header_limit) {
    return ProtocolErrorResponse(431, "headers_too_large", "the request headers are too large");
  }
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category() &&
      ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
    return ErrorResponse(InvalidArgument("the request is not valid HTTP/1.1"));
  }
  return std::nullopt;
}

asio::awaitable<Response> ServerImpl::RunHandler(std::shared_ptr<Request> req) {
  // The handler may block, so it runs on the pool; this coroutine resumes on its strand
  // when it is done. The pool's coroutine owns the request, so a handler that outlives
  // this session (the server stopped after the grace period) still has it.
  // The lambda and the operation are named rather than temporaries of the co_await
  // expression: GCC 12 destroys such temporaries twice.
  auto invoke = [this, req]() -> asio::awaitable<Response> { co_return InvokeHandler(*req); };
  auto on_pool = asio::co_spawn(pool_, std::move(invoke), asio::use_awaitable);
  Response resp = co_await std::move(on_pool);
  co_return resp;
}

Response ServerImpl::InvokeHandler(Request& req) const {
  try {
    return handler_(req);
  } catch (const std::exception& e) {
    LogError("http.handler_exception",
             {{"method", req.method}, {"path", req.path}, {"error", e.what()}});
  } catch (...) {
    LogError("http.handler_exception",
             {{"method", req.method}, {"path", req.path}, {"error", "unknown exception"}});
  }
  return ErrorResponse(Internal("an internal error occurred"));
}

}  // namespace

StatusOr<std::unique_ptr<Server>> Server::Create(ServerOptions options, Handler handler) {
  if (!handler) return InvalidArgument("the server needs a handler");
  if (options.io_threads < 1 || options.worker_threads < 1) {
    return InvalidArgument("io_threads and worker_threads must be at least 1");
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
  try {
    std::unique_ptr<asio::ssl::context> tls;
    if (!options.tls_cert_file.empty()) {
      GPUNEX_ASSIGN_OR_RETURN(tls, MakeTlsContext(options));
    }
    const bool use_tls = tls != nullptr;
    const std::string listen = options.listen;
    auto server =
        std::make_unique<ServerImpl>(std::move(options), std::move(handler), std::move(tls));
    GPUNEX_RETURN_IF_ERROR(server->Listen());
    LogInfo("http.listening", {{"listen", listen}, {"port", server->port()}, {"tls", use_tls}});
    return std::unique_ptr<Server>(std::move(server));
  } catch (const std::exception& e) {
    // Thread creation or the TLS library failed.
    return Internal(std::string("cannot start the HTTP server: ") + e.what());
  }
}

}  // namespace gpunex::platform::http
