// The HTTP server on Boost.Beast and Asio with C++20 coroutines. This is the only file of
// gpunex that includes Beast or Asio: keep it that way, so that the rest of the platform
// compiles quickly and knows nothing of sockets.
//
// Shape: one event loop (io_context) per I/O thread, each run by that thread alone; one
// acceptor coroutine on the first loop, handing each accepted connection to the loops in
// turn; one session coroutine per connection on a strand of its own (so a connection's
// state needs no lock), which stays on its loop's thread; handlers run on a thread pool
// and the session waits for them without blocking an I/O thread. (One io_context shared
// by all I/O threads hands every completion from the thread that saw it to another: on a
// bulk transfer that costs more CPU than the transfer itself.) The session
// coroutine is a template over the stream type, shared by plain TCP and TLS.
//
// A WebSocket upgrade turns the session into three coroutines on the connection's strand:
// a reader (hands each message to the worker pool, one at a time per connection), a writer
// (the only one that writes: queued messages, pings, the close frame) and a watchdog (the
// session coroutine itself: idle and closing deadlines). WsConnection is what they share
// with the application's threads.
//
// A request on a stream route (stream.h) is served by ServeStream on the session
// coroutine, once its header is in: a download through Beast's serializer from one shared
// pattern buffer, an upload read straight from the stream into the connection's buffer and
// counted by Beast's parser (DiscardBody) without being copied.
#include "platform/http/server.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
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
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <cctype>
#include <cstring>
#include <deque>
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
namespace websocket = boost::beast::websocket;
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

// The bounds of a WebSocket connection's send queue (websocket.h documents them).
constexpr size_t kWsMaxQueuedBytes = 4 << 20;
constexpr size_t kWsMaxQueuedMessages = 1024;
// Received messages waiting for OnMessage beyond which the reader stops reading.
constexpr size_t kWsMaxInboxBytes = 4 << 20;
constexpr size_t kWsMaxInboxMessages = 64;
// OnMessage calls one pool task makes before it yields the thread to other work.
constexpr int kWsDispatchBatch = 16;
// Ping intervals without anything received after which a WebSocket peer is given up.
constexpr int kWsIdleIntervals = 3;

// A streamed body moves through buffers of this size.
constexpr size_t kStreamChunk = 1 << 20;

// The body of an upload to a stream route: counted and dropped, never copied.
struct DiscardBody {
  using value_type = uint64_t;  // bytes received

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(bhttp::header<isRequest, Fields>&, value_type& received) : received_(received) {}
    void init(const boost::optional<std::uint64_t>&, error_code& ec) { ec = {}; }
    template <class ConstBufferSequence>
    size_t put(const ConstBufferSequence& buffers, error_code& ec) {
      ec = {};
      const size_t n = beast::buffer_bytes(buffers);
      received_ += n;
      return n;
    }
    void finish(error_code& ec) { ec = {}; }

   private:
    value_type& received_;
  };
};

// What a download route sends, over and over: pseudo-random bytes (xorshift64*), so that
// nothing on the way can compress them. Built once; never written afterwards.
char* StreamPattern() {
  static const std::unique_ptr<char[]> pattern = [] {
    auto p = std::make_unique<char[]>(kStreamChunk);
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < kStreamChunk; i += sizeof(uint64_t)) {
      x ^= x >> 12;
      x ^= x << 25;
      x ^= x >> 27;
      const uint64_t v = x * 0x2545F4914F6CDD1DULL;
      std::memcpy(p.get() + i, &v, sizeof v);
    }
    return p;
  }();
  return pattern.get();
}

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
// target; the request is only dispatched when it is OK. Moves the body out of `msg`,
// whose header stays (a WebSocket handshake still needs it).
std::shared_ptr<Request> ToRequest(bhttp::request<bhttp::string_body>& msg,
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
  // Starts closing a WebSocket connection with 1001; empty unless one is open.
  std::function<void()> going_away;
};

// A close code the server may put in a close frame (RFC 6455 section 7.4): others
// (1004-1006, 1015, unassigned ones) become 1000.
int SendableCloseCode(int code) {
  if ((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
      (code >= 3000 && code <= 4999)) {
    return code;
  }
  return 1000;
}

// A close reason fits in 123 bytes; cut at a UTF-8 character boundary, since the peer
// fails the connection on a malformed reason.
std::string TruncateCloseReason(std::string reason) {
  constexpr size_t kMax = 123;
  if (reason.size() <= kMax) return reason;
  size_t n = kMax;
  while (n > 0 && (static_cast<unsigned char>(reason[n]) & 0xC0) == 0x80) --n;
  reason.resize(n);
  return reason;
}

void CallOnClose(WebSocketSession& session, const std::string& remote) {
  try {
    session.OnClose();
  } catch (const std::exception& e) {
    LogError("http.websocket_handler_exception", {{"remote", remote}, {"error", e.what()}});
  } catch (...) {
    LogError("http.websocket_handler_exception",
             {{"remote", remote}, {"error", "unknown exception"}});
  }
}

// One WebSocket connection as the application and the session coroutines share it: the
// send queue (filled by the application, emptied by the writer coroutine), the requested
// close, and the inbox of received messages (filled by the reader coroutine, emptied by
// Dispatch() on the worker pool, which calls the session serially).
//
// The coroutines wait on timers of the session frame; Poke() cancels them from any thread
// by posting to the strand, and only while the frame is attached (Attach() .. Detach()),
// so a connection that outlives its session, or the server, touches neither.
class WsConnection final : public WebSocketConnection,
                           public std::enable_shared_from_this<WsConnection> {
 public:
  enum class OutKind { kNothing, kMessage, kClose };
  struct Outgoing {
    OutKind kind = OutKind::kNothing;
    std::string text;  // kMessage: the message; kClose: the reason
    int code = 0;      // kClose
  };

  WsConnection(asio::any_io_executor strand, asio::thread_pool::executor_type pool,
               std::string remote)
      : pool_(std::move(pool)), remote_(std::move(remote)), strand_(std::move(strand)) {}

  bool Send(std::string text) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (send_closed_) return false;
    if (outbox_.size() >= kWsMaxQueuedMessages || outbox_bytes_ + text.size() > kWsMaxQueuedBytes) {
      LogWarn("http.websocket_send_queue_full", {{"remote", remote_},
                                                 {"queued_messages", outbox_.size()},
                                                 {"queued_bytes", outbox_bytes_}});
      RequestCloseLocked(1008, "send queue full", /*drop_queue=*/true);
      return false;
    }
    outbox_bytes_ += text.size();
    outbox_.push_back(std::move(text));
    PokeLocked();
    return true;
  }

  void Close(int code, std::string reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    RequestCloseLocked(code, std::move(reason), /*drop_queue=*/false);
  }

  std::string RemoteAddr() const override { return remote_; }

  // A close decided by the server (shutdown, protocol, a throwing handler): unlike Close(),
  // the messages still queued are dropped.
  void Abort(int code, std::string reason) {
    std::lock_guard<std::mutex> lock(mu_);
    RequestCloseLocked(code, std::move(reason), /*drop_queue=*/true);
  }

  // The accepted application session. REQUIRES: called once, before Deliver().
  void Start(std::shared_ptr<WebSocketSession> session) {
    std::lock_guard<std::mutex> lock(mu_);
    session_ = std::move(session);
  }

  // On the strand: `signals` (timers of the session frame) are cancelled by Poke() from
  // now until Detach().
  void Attach(std::vector<asio::steady_timer*> signals) {
    std::lock_guard<std::mutex> lock(mu_);
    signals_ = std::move(signals);
    attached_ = true;
  }

  // Ends the connection for the application: Send() fails from now on and Poke() stops.
  // Calls OnClose here unless it was called or a Dispatch() is running (which will):
  // the session ended without Finish(), or the server is being destroyed and its pool,
  // already joined, dropped the Dispatch() that would have called it.
  void Detach() {
    std::shared_ptr<WebSocketSession> orphan;
    {
      std::lock_guard<std::mutex> lock(mu_);
      attached_ = false;
      signals_.clear();
      strand_ = asio::any_io_executor();
      send_closed_ = true;
      outbox_.clear();
      outbox_bytes_ = 0;
      finished_ = true;
      if (!on_close_called_ && !dispatching_) {
        on_close_called_ = true;
        inbox_.clear();
        orphan = std::move(session_);
      }
    }
    if (orphan) CallOnClose(*orphan, remote_);
  }

  // For the writer: the next message, else the requested close frame (once), else nothing.
  Outgoing TakeOutgoing() {
    std::lock_guard<std::mutex> lock(mu_);
    Outgoing out;
    if (!outbox_.empty()) {
      out.kind = OutKind::kMessage;
      out.text = std::move(outbox_.front());
      outbox_.pop_front();
      outbox_bytes_ -= out.text.size();
    } else if (close_code_ != 0 && !close_taken_) {
      close_taken_ = true;
      out.kind = OutKind::kClose;
      out.code = close_code_;
      out.text = close_reason_;
    }
    return out;
  }

  // When a close was first requested, if it was.
  std::optional<std::chrono::steady_clock::time_point> close_requested_at() const {
    std::lock_guard<std::mutex> lock(mu_);
    return close_requested_at_;
  }

  // Whether the reader should wait for OnMessage to catch up before reading more.
  bool InboxFull() const {
    std::lock_guard<std::mutex> lock(mu_);
    return InboxFullLocked();
  }

  // A received message for OnMessage; dropped once a close has been requested.
  void Deliver(std::string text) {
    std::lock_guard<std::mutex> lock(mu_);
    if (close_code_ != 0 || finished_) return;
    inbox_bytes_ += text.size();
    inbox_.push_back(std::move(text));
    ScheduleDispatchLocked();
  }

  // The connection is closed: no more Sends; OnClose follows the messages still in the
  // inbox. on_close_done() turns true (with a Poke) once it has returned.
  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    send_closed_ = true;
    outbox_.clear();
    outbox_bytes_ = 0;
    finished_ = true;
    ScheduleDispatchLocked();
  }

  bool on_close_done() const {
    std::lock_guard<std::mutex> lock(mu_);
    return on_close_done_;
  }

  // The code of the close this side requested, 0 when none was.
  int requested_close_code() const {
    std::lock_guard<std::mutex> lock(mu_);
    return close_code_;
  }

 private:
  // The pool task that runs Dispatch(); when the pool drops it unrun (the server is
  // being destroyed), it says so, so that Detach() knows OnClose is still owed.
  class DispatchTask {
   public:
    explicit DispatchTask(std::shared_ptr<WsConnection> conn) : conn_(std::move(conn)) {}
    DispatchTask(DispatchTask&& other) noexcept = default;
    DispatchTask& operator=(DispatchTask&&) = delete;
    ~DispatchTask() {
      if (conn_ != nullptr) conn_->DispatchDropped();
    }
    void operator()() {
      std::shared_ptr<WsConnection> conn = std::move(conn_);
      conn->Dispatch();
    }

   private:
    std::shared_ptr<WsConnection> conn_;
  };

  bool InboxFullLocked() const {
    return inbox_.size() >= kWsMaxInboxMessages || inbox_bytes_ >= kWsMaxInboxBytes;
  }

  void RequestCloseLocked(int code, std::string reason, bool drop_queue) {
    send_closed_ = true;
    if (drop_queue) {
      outbox_.clear();
      outbox_bytes_ = 0;
    }
    if (close_code_ != 0) return;
    close_code_ = SendableCloseCode(code);
    close_reason_ = TruncateCloseReason(std::move(reason));
    close_requested_at_ = std::chrono::steady_clock::now();
    PokeLocked();
  }

  void PokeLocked() {
    if (!attached_ || poke_pending_) return;
    poke_pending_ = true;
    asio::post(strand_, [self = shared_from_this()] { self->OnPoke(); });
  }

  void OnPoke() {
    std::vector<asio::steady_timer*> signals;
    {
      std::lock_guard<std::mutex> lock(mu_);
      poke_pending_ = false;
      signals = signals_;
    }
    // On the strand, where Detach() also runs: the timers are alive.
    for (asio::steady_timer* timer : signals) timer->cancel();
  }

  void ScheduleDispatchLocked() {
    if (dispatching_) return;
    dispatching_ = true;
    asio::post(pool_, DispatchTask(shared_from_this()));
  }

  void DispatchDropped() {
    std::lock_guard<std::mutex> lock(mu_);
    dispatching_ = false;
  }

  // On the pool: calls OnMessage for queued messages, then OnClose once finished.
  void Dispatch() {
    for (int i = 0; i < kWsDispatchBatch; ++i) {
      std::string text;
      std::shared_ptr<WebSocketSession> session;
      bool closing = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!inbox_.empty()) {
          const bool was_full = InboxFullLocked();
          text = std::move(inbox_.front());
          inbox_.pop_front();
          inbox_bytes_ -= text.size();
          if (was_full) PokeLocked();  // the reader may be waiting
          session = session_;
        } else if (finished_ && !on_close_called_) {
          on_close_called_ = true;
          closing = true;
          // Dropping the reference breaks the cycle session -> connection -> session.
          session = std::move(session_);
        } else {
          dispatching_ = false;
          return;
        }
      }
      if (closing) {
        if (session != nullptr) CallOnClose(*session, remote_);
        session.reset();
        std::lock_guard<std::mutex> lock(mu_);
        on_close_done_ = true;
        dispatching_ = false;
        PokeLocked();
        return;
      }
      if (session == nullptr) continue;
      try {
        session->OnMessage(std::move(text));
      } catch (const std::exception& e) {
        LogError("http.websocket_handler_exception", {{"remote", remote_}, {"error", e.what()}});
        Abort(1011, "internal error");
      } catch (...) {
        LogError("http.websocket_handler_exception",
                 {{"remote", remote_}, {"error", "unknown exception"}});
        Abort(1011, "internal error");
      }
    }
    // Yield the thread; dispatching_ stays true.
    asio::post(pool_, DispatchTask(shared_from_this()));
  }

  // (A thread_pool executor holds no reference that could outlive the pool.)
  const asio::thread_pool::executor_type pool_;
  const std::string remote_;

  mutable std::mutex mu_;
  // Sending.
  std::deque<std::string> outbox_;  // GUARDED_BY(mu_)
  size_t outbox_bytes_ = 0;         // GUARDED_BY(mu_)
  bool send_closed_ = false;        // GUARDED_BY(mu_): Send() refuses
  int close_code_ = 0;              // GUARDED_BY(mu_): 0 until a close is requested
  std::string close_reason_;        // GUARDED_BY(mu_)
  bool close_taken_ = false;        // GUARDED_BY(mu_): the writer has it
  std::optional<std::chrono::steady_clock::time_point> close_requested_at_;  // GUARDED_BY(mu_)
  // Receiving.
  std::shared_ptr<WebSocketSession> session_;  // GUARDED_BY(mu_): null after OnClose
  std::deque<std::string> inbox_;              // GUARDED_BY(mu_)
  size_t inbox_bytes_ = 0;                     // GUARDED_BY(mu_)
  bool dispatching_ = false;      // GUARDED_BY(mu_): a DispatchTask is queued or running
  bool finished_ = false;         // GUARDED_BY(mu_): OnClose is due after the inbox
  bool on_close_called_ = false;  // GUARDED_BY(mu_)
  bool on_close_done_ = false;    // GUARDED_BY(mu_)
  // Waking the session coroutines. The strand is dropped by Detach(): a copy kept by a
  // connection that outlives the server would outlive its io_context.
  asio::any_io_executor strand_;              // GUARDED_BY(mu_)
  std::vector<asio::steady_timer*> signals_;  // GUARDED_BY(mu_)
  bool attached_ = false;                     // GUARDED_BY(mu_)
  bool poke_pending_ = false;                 // GUARDED_BY(mu_)
};

// Keeps a WsConnection attached to the timers of a session frame for the frame's lifetime
// (including its destruction with a server that gave up waiting for it).
class WsAttachment {
 public:
  WsAttachment(std::shared_ptr<WsConnection> conn, std::vector<asio::steady_timer*> signals)
      : conn_(std::move(conn)) {
    conn_->Attach(std::move(signals));
  }
  ~WsAttachment() { conn_->Detach(); }
  WsAttachment(const WsAttachment&) = delete;
  WsAttachment& operator=(const WsAttachment&) = delete;

 private:
  const std::shared_ptr<WsConnection> conn_;
};

// What the coroutines of one WebSocket session share. Touched only on its strand.
struct WsLoop {
  explicit WsLoop(const asio::any_io_executor& ex)
      : wake_main(ex), wake_reader(ex), wake_writer(ex) {}
  asio::steady_timer wake_main;    // the watchdog waits on it
  asio::steady_timer wake_reader;  // the reader waits on it while the inbox is full
  asio::steady_timer wake_writer;  // the writer waits on it for messages or the next ping
  bool reader_done = false;
  bool writer_done = false;
  bool stop = false;  // the socket was closed under the coroutines: leave
  bool reader_paused = false;
  std::chrono::steady_clock::time_point last_received;  // any frame, control ones included
};

// Reads messages and hands them to the application until the connection fails or closes.
template <typename WsStream>
asio::awaitable<void> WsReader(WsStream& ws, WsConnection& conn, WsLoop& loop) {
  beast::flat_buffer buffer;
  for (;;) {
    while (!loop.stop && conn.InboxFull()) {
      loop.reader_paused = true;
      loop.wake_reader.expires_at(asio::steady_timer::time_point::max());
      co_await loop.wake_reader.async_wait(kAwait);
    }
    if (loop.stop) co_return;
    if (loop.reader_paused) {
      // The peer could not be heard while paused: the idle clock restarts.
      loop.reader_paused = false;
      loop.last_received = std::chrono::steady_clock::now();
    }
    // Beast answers pings, and on a message over read_message_max or a protocol error
    // sends the close frame (1009, 1002) and fails the read.
    auto [ec, n] = co_await ws.async_read(buffer, kAwait);
    if (ec) co_return;
    loop.last_received = std::chrono::steady_clock::now();
    if (ws.got_binary()) {
      conn.Abort(1003, "binary messages are not accepted");
    } else {
      conn.Deliver(beast::buffers_to_string(buffer.data()));
    }
    buffer.clear();
  }
}

// Writes queued messages, pings every `ping_interval` and finally the close frame.
template <typename WsStream>
asio::awaitable<void> WsWriter(WsStream& ws, WsConnection& conn, WsLoop& loop,
                               std::chrono::steady_clock::duration ping_interval) {
  auto next_ping = std::chrono::steady_clock::now() + ping_interval;
  for (;;) {
    if (loop.stop || loop.reader_done) co_return;
    WsConnection::Outgoing out = conn.TakeOutgoing();
    if (out.kind == WsConnection::OutKind::kMessage) {
      auto [ec, n] = co_await ws.async_write(asio::buffer(out.text), kAwait);
      // The socket failed, or Beast is closing it: the reader sees the same and ends.
      if (ec) co_return;
    } else if (out.kind == WsConnection::OutKind::kClose) {
      // When Beast already sent a close frame (answering the peer's, or failing the
      // connection), it must not be sent twice.
      if (!ws.is_open()) co_return;
      websocket::close_reason reason(static_cast<websocket::close_code>(out.code),
                                     beast::string_view(out.text));
      [[maybe_unused]] auto [ec] = co_await ws.async_close(reason, kAwait);
      co_return;
    }
    if (std::chrono::steady_clock::now() >= next_ping) {
      if (!ws.is_open()) co_return;
      websocket::ping_data payload;
      auto [ec] = co_await ws.async_ping(payload, kAwait);
      if (ec) co_return;
      next_ping = std::chrono::steady_clock::now() + ping_interval;
      continue;
    }
    if (out.kind == WsConnection::OutKind::kNothing) {
      loop.wake_writer.expires_at(next_ping);
      co_await loop.wake_writer.async_wait(kAwait);
    }
  }
}

class ServerImpl final : public Server {
 public:
  ServerImpl(ServerOptions options, Handler handler, std::unique_ptr<asio::ssl::context> tls)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        tls_(std::move(tls)),
        iocs_(MakeLoops(options_.io_threads)),
        acceptor_(asio::make_strand(*iocs_[0])),
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
      conn_->going_away = nullptr;
      std::lock_guard<std::mutex> lock(server_->mu_);
      server_->connections_.erase(conn_);
    }
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;

   private:
    ServerImpl* const server_;
    const std::shared_ptr<Connection> conn_;
  };

  static std::vector<std::unique_ptr<asio::io_context>> MakeLoops(int n);
  void RunEventLoop(asio::io_context& ioc);
  asio::awaitable<void> AcceptLoop();
  asio::awaitable<void> Session(tcp::socket socket);
  template <typename Stream>
  asio::awaitable<void> Serve(Stream& stream, Connection& conn, const std::string& remote);
  template <typename Stream>
  asio::awaitable<bool> Write(Stream& stream, bhttp::response<bhttp::string_body>& res);
  // Serves an accepted WebSocket upgrade until the connection is closed and the session's
  // OnClose has returned. `upgrade` is the upgrade request (its body already read).
  template <typename Stream>
  asio::awaitable<void> ServeWebSocket(Stream& stream, Connection& conn,
                                       const bhttp::request<bhttp::string_body>& upgrade,
                                       std::shared_ptr<WsConnection> ws_conn);
  // The watchdog of a WebSocket session: returns once its reader and writer are done,
  // closing the socket under them when the peer has been silent for too long or a close
  // requested by this side has not completed within read_timeout.
  asio::awaitable<void> WatchWebSocket(beast::tcp_stream& tcp_stream, WsConnection& ws_conn,
                                       WsLoop& loop, const std::string& remote);
  // Answers an upgrade request on a WebSocket route: the session on success, otherwise
  // the refusal to send (the acceptor's error, or 500 when it threw or returned null).
  asio::awaitable<std::pair<Status, std::shared_ptr<WebSocketSession>>> RunAcceptor(
      const WebSocketAcceptor& acceptor, std::shared_ptr<Request> req,
      std::shared_ptr<WsConnection> ws_conn);
  template <typename Stream>
  asio::awaitable<void> Close(Stream& stream, bool discard_input);
  // The stream route for a request target, or null.
  const StreamRoute* FindStreamRoute(beast::string_view target) const;
  // Serves a request on a stream route whose header `parser` has read (its body, if any,
  // is still unread). Returns whether the connection may carry another request; when it
  // may not, it has been closed.
  template <typename Stream>
  asio::awaitable<bool> ServeStream(Stream& stream, beast::flat_buffer& buffer,
                                    bhttp::request_parser<bhttp::string_body>& parser,
                                    const StreamRoute& route, const std::string& remote);
  // Arms the stream's timer for the next read or write of a streamed body: read_timeout,
  // cut to what is left before `deadline`. False when the deadline has passed.
  bool ArmStreamTimer(beast::tcp_stream& tcp_stream,
                      std::chrono::steady_clock::time_point deadline) const;
  asio::awaitable<std::pair<Status, StreamGrant>> RunAuthorizer(const StreamAuthorizer& authorize,
                                                                std::shared_ptr<Request> req);
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

  // One per I/O thread (at least one); the first also runs the acceptor.
  const std::vector<std::unique_ptr<asio::io_context>> iocs_;
  size_t next_loop_ = 0;    // the loop of the next connection; used only on the acceptor's strand
  tcp::acceptor acceptor_;  // used only on its strand
  asio::thread_pool pool_;  // runs handlers
};

Status ServerImpl::Listen() {
  std::string host, port;
  GPUNEX_RETURN_IF_ERROR(SplitHostPort(options_.listen, &host, &port));
  error_code ec;
  tcp::resolver resolver(*iocs_[0]);
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
  // Loops without a connection yet must not return: they run until Drain stops them.
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> keep;
  for (const auto& ioc : iocs_) keep.push_back(asio::make_work_guard(*ioc));
  std::vector<std::thread> threads;
  for (size_t i = 1; i < iocs_.size(); ++i) {
    threads.emplace_back([this, i] { RunEventLoop(*iocs_[i]); });
  }
  RunEventLoop(*iocs_[0]);
  for (std::thread& t : threads) t.join();
  serving_ = false;
  // The event loop has stopped, so nothing else touches the connections: close those that
  // outlived the grace period. Their coroutines are destroyed with the server.
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& conn : connections_) {
    if (conn->close) conn->close();
  }
}

std::vector<std::unique_ptr<asio::io_context>> ServerImpl::MakeLoops(int n) {
  std::vector<std::unique_ptr<asio::io_context>> loops;
  for (int i = 0; i < std::max(n, 1); ++i) loops.push_back(std::make_unique<asio::io_context>(1));
  return loops;
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
    std::lock_guard<std::mutex> lock(mu_);
    // Under mu_: a session registered after this sees draining_ and leaves by itself.
    draining_ = true;
    for (const auto& conn : connections_) {
      asio::post(conn->executor, [conn] {
        if (conn->idle && conn->close) {
          conn->close();
        } else if (conn->going_away) {
          conn->going_away();
        }
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
  for (const auto& ioc : iocs_) ioc->stop();
}

asio::awaitable<void> ServerImpl::AcceptLoop() {
  for (;;) {
    // Each connection gets its own strand on the next loop; any_io_executor so sockets
    // are tcp::socket.
    asio::any_io_executor strand = asio::make_strand(*iocs_[next_loop_++ % iocs_.size()]);
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
    // The body limit depends on the route, known once the header is in: a stream route
    // has its own; other requests get max_body_bytes, checked against Content-Length
    // before any body byte is read and by the parser for a chunked body.
    parser.body_limit(boost::none);
    auto [hec, hn] = co_await bhttp::async_read_header(stream, buffer, parser, kAwait);
    if (!hec) {
      if (const StreamRoute* route = FindStreamRoute(parser.get().target())) {
        if (!co_await ServeStream(stream, buffer, parser, *route, remote)) co_return;
        continue;
      }
      if (parser.content_length().value_or(0) > options_.max_body_bytes) {
        hec = bhttp::error::body_limit;
      } else {
        parser.body_limit(options_.max_body_bytes);
      }
    }
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
    std::shared_ptr<Request> req = ToRequest(msg, remote, kTls, &target_status);
    Response resp;
    const auto ws_route = target_status.ok() ? options_.websocket_routes.find(req->path)
                                             : options_.websocket_routes.end();
    if (!target_status.ok()) {
      resp = ErrorResponse(target_status);
    } else if (ws_route == options_.websocket_routes.end()) {
      resp = co_await RunHandler(std::move(req));
    } else if (!websocket::is_upgrade(msg)) {
      resp = ProtocolErrorResponse(426, "upgrade_required",
                                   "this endpoint only accepts WebSocket connections");
      resp.SetHeader("Upgrade", "websocket");
    } else if (buffer.size() != 0) {
      // The client must wait for the handshake's answer before sending frames; bytes
      // already buffered here would be lost to the WebSocket stream.
      resp = ErrorResponse(InvalidArgument("data followed the WebSocket upgrade request"));
      keep_alive = false;
    } else if (draining_) {
      resp = ErrorResponse(Unavailable("the server is shutting down"));
    } else {
      req->route = req->path;
      auto ws_conn = std::make_shared<WsConnection>(conn.executor, pool_.get_executor(), remote);
      auto accepting = RunAcceptor(ws_route->second, req, ws_conn);
      auto [status, session] = co_await std::move(accepting);
      if (status.ok()) {
        ws_conn->Start(std::move(session));
        co_await ServeWebSocket(stream, conn, msg, std::move(ws_conn));
        co_return;
      }
      ws_conn->Detach();
      resp = ErrorResponse(status);
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

const StreamRoute* ServerImpl::FindStreamRoute(beast::string_view target) const {
  if (options_.stream_routes.empty()) return nullptr;
  std::string path;
  std::map<std::string, std::string> query;
  // A bad target is answered by the normal path.
  if (!ParseTarget(std::string_view(target.data(), target.size()), &path, &query).ok()) {
    return nullptr;
  }
  auto it = options_.stream_routes.find(path);
  return it == options_.stream_routes.end() ? nullptr : &it->second;
}

bool ServerImpl::ArmStreamTimer(beast::tcp_stream& tcp_stream,
                                std::chrono::steady_clock::time_point deadline) const {
  const auto left = deadline - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return false;
  tcp_stream.expires_after(
      std::min<std::chrono::steady_clock::duration>(options_.read_timeout, left));
  return true;
}

template <typename Stream>
asio::awaitable<bool> ServerImpl::ServeStream(Stream& stream, beast::flat_buffer& buffer,
                                              bhttp::request_parser<bhttp::string_body>& parser,
                                              const StreamRoute& route, const std::string& remote) {
  constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  beast::tcp_stream& tcp_stream = beast::get_lowest_layer(stream);
  const unsigned version = parser.get().version();
  const bool has_body = !parser.is_done();
  const bool expects_continue =
      version >= 11 && IEquals(parser.get()[bhttp::field::expect], "100-continue");
  bool keep_alive = parser.get().keep_alive();
  const bool upload = route.kind == StreamRoute::Kind::kUpload;
  const char* const method = upload ? "POST" : "GET";
  Status target_status;  // already parsed by FindStreamRoute
  std::shared_ptr<Request> req = ToRequest(parser.get(), remote, kTls, &target_status);
  req->route = req->path;

  // Sends `resp`; `close` closes the connection afterwards (draining what the client
  // still sends, since a body may be left unread). (Named arguments only: GCC 12
  // mishandles temporaries in co_await expressions.)
  auto answer = [&](Response& resp, bool close) -> asio::awaitable<bool> {
    resp.SetHeader("Cache-Control", "no-store");
    resp.SetHeader("X-Content-Type-Options", "nosniff");
    const bool keep = keep_alive && !close && !draining_;
    auto res = ToBeast(std::move(resp), version, keep, false);
    if (!co_await Write(stream, res)) co_return false;
    if (!keep) co_await Close(stream, close);
    co_return keep;
  };
  auto too_large = [](uint64_t limit) {
    return ErrorResponse(Status(StatusCode::kPayloadTooLarge, "the request body is too large",
                                {{"body", "must be at most " + std::to_string(limit) + " bytes"}}));
  };

  // Refusals leave the body unread, so the connection cannot carry another request.
  std::optional<Response> refusal;
  if (req->method != method) {
    refusal = ProtocolErrorResponse(405, "method_not_allowed",
                                    std::string("this endpoint only accepts ") + method);
    refusal->SetHeader("Allow", method);
  } else if (draining_) {
    refusal = ErrorResponse(Unavailable("the server is shutting down"));
  } else if (!upload && has_body) {
    refusal = ErrorResponse(InvalidArgument("a download request has no body"));
  }
  StreamGrant grant;
  if (!refusal) {
    auto authorizing = RunAuthorizer(route.authorize, req);
    auto [status, granted] = co_await std::move(authorizing);
    if (!status.ok()) {
      refusal = ErrorResponse(status);
    } else if (upload && parser.content_length().value_or(0) > granted.bytes) {
      refusal = too_large(granted.bytes);
    } else {
      grant = std::move(granted);
    }
  }
  if (refusal) {
    const bool close = has_body || draining_;
    const bool keep = co_await answer(*refusal, close);
    co_return keep;
  }

  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + options_.stream_timeout;
  auto log_done = [&](uint64_t bytes, bool complete) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    LogInfo("http.stream", {{"path", req->path},
                            {"remote", remote},
                            {"bytes", bytes},
                            {"seconds", seconds},
                            {"complete", complete}});
  };

  if (!upload) {
    bhttp::response<bhttp::buffer_body> res{bhttp::status::ok, version};
    res.set(bhttp::field::content_type, "application/octet-stream");
    res.set(bhttp::field::cache_control, "no-store");
    res.set("X-Content-Type-Options", "nosniff");
    res.content_length(grant.bytes);
    keep_alive = keep_alive && !draining_;
    res.keep_alive(keep_alive);
    res.body().data = nullptr;
    res.body().more = true;
    bhttp::response_serializer<bhttp::buffer_body> serializer{res};
    uint64_t sent = 0;
    bool ok = ArmStreamTimer(tcp_stream, deadline);
    if (ok) {
      auto [ec, n] = co_await bhttp::async_write_header(stream, serializer, kAwait);
      ok = !ec;
    }
    while (ok && sent < grant.bytes) {
      // A shutdown ends the transfer rather than waiting for it.
      if (draining_ || !ArmStreamTimer(tcp_stream, deadline)) {
        ok = false;
        break;
      }
      const size_t n = static_cast<size_t>(std::min<uint64_t>(grant.bytes - sent, kStreamChunk));
      res.body().data = StreamPattern();
      res.body().size = n;
      res.body().more = true;
      // The serializer takes the whole buffer: need_buffer means it has all been written.
      auto [ec, written] = co_await bhttp::async_write(stream, serializer, kAwait);
      if (ec && ec != bhttp::error::need_buffer) {
        ok = false;
      } else {
        sent += n;
      }
    }
    if (ok && ArmStreamTimer(tcp_stream, deadline)) {
      res.body().data = nullptr;
      res.body().size = 0;
      res.body().more = false;
      auto [ec, written] = co_await bhttp::async_write(stream, serializer, kAwait);
      ok = !ec;
    } else {
      ok = false;
    }
    log_done(sent, ok);
    if (!ok) {
      error_code ignored;
      tcp_stream.socket().close(ignored);
      co_return false;
    }
    if (!keep_alive) co_await Close(stream, false);
    co_return keep_alive;
  }

  if (has_body && expects_continue) {
    bhttp::response<bhttp::empty_body> go_on{bhttp::status::continue_, 11};
    ArmStreamTimer(tcp_stream, deadline);
    auto [cec, cn] = co_await bhttp::async_write(stream, go_on, kAwait);
    if (cec) co_return false;
  }
  // Takes over the header; `parser` may only be destroyed from here on. The body is
  // read straight from the stream in pieces of up to kStreamChunk into the connection's
  // buffer (grown once, shrunk afterwards) and handed to the parser, which deframes it
  // (chunked encoding) and counts it without copying it anywhere.
  bhttp::request_parser<DiscardBody> body_parser{std::move(parser)};
  body_parser.body_limit(grant.bytes);
  body_parser.eager(true);
  const auto body_started = std::chrono::steady_clock::now();
  auto body_ended = body_started;
  error_code ec;
  while (!body_parser.is_done()) {
    if (buffer.size() > 0) {
      const size_t used = body_parser.put(buffer.data(), ec);
      buffer.consume(used);
      if (used > 0) body_ended = std::chrono::steady_clock::now();
      if (ec == bhttp::error::need_more) {
        ec = {};
      } else if (ec) {
        break;
      } else if (used > 0) {
        continue;
      }
    }
    if (draining_ || !ArmStreamTimer(tcp_stream, deadline)) {
      ec = beast::error::timeout;
      break;
    }
    auto [rec, n] = co_await stream.async_read_some(buffer.prepare(kStreamChunk), kAwait);
    buffer.commit(n);
    if (rec == asio::error::eof) {
      body_parser.put_eof(ec);
      if (!ec) ec = bhttp::error::partial_message;
      break;
    }
    if (rec) {
      ec = rec;
      break;
    }
  }
  const uint64_t received = body_parser.get().body();
  if (buffer.size() == 0) buffer.shrink_to_fit();
  log_done(received, !ec);
  if (ec) {
    refusal = ec == bhttp::error::body_limit ? too_large(grant.bytes) : ReadErrorResponse(ec);
    if (!refusal) {
      error_code ignored;
      tcp_stream.socket().close(ignored);
      co_return false;
    }
    const bool keep = co_await answer(*refusal, true);
    co_return keep;
  }
  json::object body;
  body["bytes"] = received;
  body["seconds"] = std::chrono::duration<double>(body_ended - body_started).count();
  Response done = Response::Json(200, body);
  const bool keep = co_await answer(done, false);
  co_return keep;
}

asio::awaitable<std::pair<Status, StreamGrant>> ServerImpl::RunAuthorizer(
    const StreamAuthorizer& authorize, std::shared_ptr<Request> req) {
  using Result = std::pair<Status, StreamGrant>;
  // As in RunAcceptor. `authorize` lives in options_, as long as the server.
  auto invoke = [&authorize, req]() -> asio::awaitable<Result> {
    // Named, not temporaries of the co_return expression (GCC 12; see RunHandler).
    auto call = [&]() -> Result {
      StatusOr<StreamGrant> grant = authorize(*req);
      if (!grant.ok()) return Result(grant.status(), StreamGrant());
      return Result(Status::Ok(), std::move(*grant));
    };
    auto failed = [] { return Result(Internal("an internal error occurred"), StreamGrant()); };
    co_return Guarded(*req, call, failed);
  };
  auto on_pool = asio::co_spawn(pool_, std::move(invoke), asio::use_awaitable);
  Result result = co_await std::move(on_pool);
  co_return result;
}

template <typename Stream>
asio::awaitable<void> ServerImpl::ServeWebSocket(Stream& stream, Connection& conn,
                                                 const bhttp::request<bhttp::string_body>& upgrade,
                                                 std::shared_ptr<WsConnection> ws_conn) {
  beast::tcp_stream& tcp_stream = beast::get_lowest_layer(stream);
  // From here on the WebSocket stream's timer bounds the handshakes and the watchdog the
  // rest; Beast requires the tcp_stream's own timer to be off.
  tcp_stream.expires_never();
  WsLoop loop(conn.executor);
  // Declared after `loop`, whose timers and fields its callbacks use, so destroyed first.
  websocket::stream<Stream&> ws(stream);
  websocket::stream_base::timeout timeouts;
  timeouts.handshake_timeout = options_.read_timeout;  // the closing handshake too
  timeouts.idle_timeout = websocket::stream_base::none();
  timeouts.keep_alive_pings = false;  // the writer pings on its own schedule
  ws.set_option(timeouts);
  ws.set_option(websocket::stream_base::decorator(
      [](websocket::response_type& res) { res.erase(bhttp::field::server); }));
  ws.read_message_max(options_.ws_max_message_bytes);
  ws.auto_fragment(false);
  ws.text(true);
  WsAttachment attachment(ws_conn, {&loop.wake_main, &loop.wake_reader, &loop.wake_writer});

  auto [ec] = co_await ws.async_accept(upgrade, kAwait);
  if (!ec) {
    LogInfo("http.websocket_open",
            {{"remote", ws_conn->RemoteAddr()}, {"target", std::string(upgrade.target())}});
    conn.going_away = [ws_conn] { ws_conn->Abort(1001, "going away"); };
    // Drain() posted its going_away before there was one.
    if (draining_) ws_conn->Abort(1001, "going away");
    loop.last_received = std::chrono::steady_clock::now();
    ws.control_callback([&loop](websocket::frame_type, beast::string_view) {
      loop.last_received = std::chrono::steady_clock::now();
    });
    asio::co_spawn(conn.executor, WsReader(ws, *ws_conn, loop), [&loop](std::exception_ptr e) {
      LogIfFailed(e, "websocket reader");
      loop.reader_done = true;
      loop.wake_writer.cancel();
      loop.wake_main.cancel();
    });
    asio::co_spawn(conn.executor, WsWriter(ws, *ws_conn, loop, options_.ws_ping_interval),
                   [&loop](std::exception_ptr e) {
                     LogIfFailed(e, "websocket writer");
                     loop.writer_done = true;
                     loop.wake_main.cancel();
                   });
    co_await WatchWebSocket(tcp_stream, *ws_conn, loop, ws_conn->RemoteAddr());
    ws.control_callback();
    const websocket::close_reason& peer = ws.reason();
    LogInfo("http.websocket_closed",
            {{"remote", ws_conn->RemoteAddr()},
             {"code", ws_conn->requested_close_code()},
             {"peer_code", static_cast<int>(peer.code)},
             {"peer_reason", std::string_view(peer.reason.data(), peer.reason.size())}});
  }
  conn.going_away = nullptr;
  ws_conn->Finish();
  while (!ws_conn->on_close_done()) {
    loop.wake_main.expires_at(asio::steady_timer::time_point::max());
    co_await loop.wake_main.async_wait(kAwait);
  }
}

asio::awaitable<void> ServerImpl::WatchWebSocket(beast::tcp_stream& tcp_stream,
                                                 WsConnection& ws_conn, WsLoop& loop,
                                                 const std::string& remote) {
  const auto idle_limit = kWsIdleIntervals * options_.ws_ping_interval;
  while (!loop.reader_done || !loop.writer_done) {
    const auto now = std::chrono::steady_clock::now();
    auto wake_at = asio::steady_timer::time_point::max();
    if (!loop.stop) {
      const char* give_up = nullptr;
      if (auto since = ws_conn.close_requested_at()) {
        const auto deadline = *since + options_.read_timeout;
        if (now >= deadline) give_up = "close_timeout";
        wake_at = std::min(wake_at, deadline);
      }
      if (!loop.reader_paused && !loop.reader_done) {
        const auto deadline = loop.last_received + idle_limit;
        if (now >= deadline) give_up = "idle_timeout";
        wake_at = std::min(wake_at, deadline);
      }
      if (give_up != nullptr) {
        LogInfo("http.websocket_dropped", {{"remote", remote}, {"reason", give_up}});
        // The pending reads and writes fail; the waiting coroutines see `stop`.
        loop.stop = true;
        error_code ignored;
        tcp_stream.socket().close(ignored);
        loop.wake_reader.cancel();
        loop.wake_writer.cancel();
        continue;
      }
    }
    loop.wake_main.expires_at(wake_at);
    co_await loop.wake_main.async_wait(kAwait);
  }
}

asio::awaitable<std::pair<Status, std::shared_ptr<WebSocketSession>>> ServerImpl::RunAcceptor(
    const WebSocketAcceptor& acceptor, std::shared_ptr<Request> req,
    std::shared_ptr<WsConnection> ws_conn) {
  using Result = std::pair<Status, std::shared_ptr<WebSocketSession>>;
  // As in RunHandler. The result is a pair because co_spawn needs a default-constructible
  // one. `acceptor` lives in options_, as long as the server.
  auto invoke = [&acceptor, req, ws_conn]() -> asio::awaitable<Result> {
    auto failed = [] { return Result(Internal("an internal error occurred"), nullptr); };
    auto call = [&]() -> Result {
      StatusOr<std::shared_ptr<WebSocketSession>> session = acceptor(*req, ws_conn);
      if (!session.ok()) return Result(session.status(), nullptr);
      if (*session != nullptr) return Result(Status::Ok(), std::move(*session));
      LogError("http.websocket_acceptor_null", {{"path", req->path}});
      return failed();
    };
    co_return Guarded(*req, call, failed);
  };
  auto on_pool = asio::co_spawn(pool_, std::move(invoke), asio::use_awaitable);
  Result result = co_await std::move(on_pool);
  co_return result;
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
  return Guarded(
      req, [&] { return handler_(req); },
      [] { return ErrorResponse(Internal("an internal error occurred")); });
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
