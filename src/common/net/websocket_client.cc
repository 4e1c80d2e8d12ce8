// WebSocketClient on Boost.Beast and Asio with C++20 coroutines. The only file of the agent
// that includes Beast or Asio.
//
// Shape: one io_context. Connect() runs the handshake coroutine on the calling thread
// (run_one until it completes), then hands the io_context to an I/O thread running three
// coroutines: a reader (received messages into the inbox), a writer (the only one that
// writes: queued messages, pings, the close frame) and a watchdog (idle and closing
// deadlines). The application's threads meet them in the mutex-protected queues, and wake
// them with Poke(), which posts to the io_context and cancels the timers they wait on.
// Being one thread, the I/O side needs no strand.
#include "common/net/websocket_client.h"

#include <openssl/ssl.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <deque>
#include <exception>
#include <thread>
#include <type_traits>

#include "common/event_fd.h"
#include "common/json.h"
#include "common/log.h"
#include "common/net/endpoint.h"
#include "common/thread_annotations.h"

namespace gpunex::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace websocket = boost::beast::websocket;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Completion token: results come back as (error_code, ...) tuples, not exceptions.
constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);

constexpr char kUserAgent[] = "gpunex-agent";
// The bounds of the send queue (websocket_client.h documents them).
constexpr size_t kMaxQueuedBytes = 4 << 20;
constexpr size_t kMaxQueuedMessages = 1024;
// Received messages not yet taken by Receive() beyond which the reader stops reading.
constexpr size_t kMaxInboxBytes = 4 << 20;
constexpr size_t kMaxInboxMessages = 1024;
// The buffer in which messages are masked before they are written (see Open).
constexpr size_t kMaskBufferBytes = 64 << 10;
// Ping intervals without anything received after which the platform is given up.
constexpr int kIdleIntervals = 3;
// How long a close requested by this side may take before the socket is simply closed.
constexpr auto kCloseTimeout = 5s;

using PlainStream = beast::tcp_stream;
using TlsStream = asio::ssl::stream<beast::tcp_stream>;

// A close code this side may send (RFC 6455 section 7.4); others become 1000.
int SendableCloseCode(int code) {
  if ((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
      (code >= 3000 && code <= 4999)) {
    return code;
  }
  return 1000;
}

// At most 123 bytes, cut at a UTF-8 character boundary (the peer checks the encoding).
std::string TruncateCloseReason(std::string reason) {
  constexpr size_t kMax = 123;
  if (reason.size() <= kMax) return reason;
  size_t n = kMax;
  while (n > 0 && (static_cast<unsigned char>(reason[n]) & 0xC0) == 0x80) --n;
  reason.resize(n);
  return reason;
}

bool IsSafeHeader(const std::string& name, const std::string& value) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) ||
          std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos)) {
      return false;
    }
  }
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos;
}

// The status for an upgrade the platform answered with something else than 101: its HTTP
// status and the message of its JSON error body ({"error": {"message": ...}}).
Status RefusalStatus(const websocket::response_type& res) {
  const int status = res.result_int();
  std::string message;
  StatusOr<json::value> body = ParseJson(res.body());
  if (body.ok() && body->is_object()) {
    const json::value* error = body->as_object().if_contains("error");
    if (error != nullptr && error->is_object()) {
      const json::value* m = error->as_object().if_contains("message");
      if (m != nullptr && m->is_string()) message = std::string(m->as_string());
    }
  }
  if (message.empty()) message = res.body().substr(0, 200);
  if (message.empty()) message = std::string(res.reason());
  const std::string text =
      "the platform refused the connection (HTTP " + std::to_string(status) + "): " + message;
  if (status == 401) return Unauthenticated(text);
  if (status == 403) return PermissionDenied(text);
  if (status == 404) return NotFound(text);
  if (status >= 400 && status < 500 && status != 429) return FailedPrecondition(text);
  return Unavailable(text);
}

StatusOr<std::unique_ptr<asio::ssl::context>> MakeTlsContext(
    const WebSocketClientOptions& options) {
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  if (SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION) != 1) {
    return Internal("cannot configure TLS");
  }
  error_code ec;
  if (options.insecure_skip_verify) {
    LogWarn("net.ws.tls_verification_disabled",
            {{"message",
              "insecure_skip_verify is set: the platform's certificate is NOT verified and anyone "
              "on the path can impersonate it. For tests only."}});
    ctx->set_verify_mode(asio::ssl::verify_none, ec);
    return ctx;
  }
  if (!options.ca_file.empty()) {
    ctx->load_verify_file(options.ca_file, ec);
    if (ec) {
      return InvalidArgument("cannot load the CA file " + options.ca_file + ": " + ec.message());
    }
  } else {
    ctx->set_default_verify_paths(ec);
    if (ec) return Internal("cannot load the system's CA certificates: " + ec.message());
  }
  ctx->set_verify_mode(asio::ssl::verify_peer, ec);
  if (ec) return Internal("cannot configure TLS: " + ec.message());
  return ctx;
}

template <typename NextLayer>
class ClientImpl final : public WebSocketClient {
 public:
  static constexpr bool kTls = std::is_same_v<NextLayer, TlsStream>;

  ClientImpl(WebSocketClientOptions options, WebSocketEndpoint endpoint,
             std::optional<HttpProxy> proxy, std::unique_ptr<asio::ssl::context> tls)
      : options_(std::move(options)),
        endpoint_(std::move(endpoint)),
        proxy_(std::move(proxy)),
        tls_(std::move(tls)) {
    if constexpr (kTls) {
      ws_.emplace(ioc_, *tls_);
    } else {
      ws_.emplace(ioc_);
    }
  }

  ~ClientImpl() override { Close(1000, ""); }

  // Connects and, on success, starts the I/O thread. REQUIRES: called once, first.
  Status Open() EXCLUDES(mu_, join_mu_);

  Status Send(std::string text) override EXCLUDES(mu_);
  int PeerCloseCode() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return peer_close_code_;
  }
  size_t QueuedBytes() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return outbox_bytes_;
  }
  size_t QueuedMessages() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return outbox_.size();
  }
  StatusOr<std::optional<std::string>> Receive(std::chrono::milliseconds timeout) override
      EXCLUDES(mu_);
  void Close(int code, std::string reason) override EXCLUDES(mu_, join_mu_);
  void NotifyOn(int event_fd, size_t low_bytes, size_t low_messages) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    notify_fd_ = event_fd;
    notify_low_bytes_ = low_bytes;
    notify_low_messages_ = low_messages;
  }

 private:
  beast::tcp_stream& tcp_stream() { return beast::get_lowest_layer(*ws_); }
  std::string Describe() const {
    return endpoint_.Authority() +
           (proxy_ ? " via the proxy " + proxy_->host + ":" + std::to_string(proxy_->port) : "");
  }

  asio::awaitable<Status> Handshake();
  asio::awaitable<Status> OpenTunnel();
  asio::awaitable<void> ReadLoop() EXCLUDES(mu_);
  asio::awaitable<void> WriteLoop() EXCLUDES(mu_);
  asio::awaitable<void> Watch() EXCLUDES(mu_);

  // Wakes the coroutines (they re-check their state). Any thread.
  void PokeLocked() REQUIRES(mu_);
  void OnPoke() EXCLUDES(mu_);
  // Signals the NotifyOn event (when one was given).
  void NotifyLocked() REQUIRES(mu_) {
    if (notify_fd_ < 0) return;
    SignalEventFd(notify_fd_);
  }
  bool InboxFullLocked() const REQUIRES(mu_) {
    return inbox_.size() >= kMaxInboxMessages || inbox_bytes_ >= kMaxInboxBytes;
  }

  const WebSocketClientOptions options_;
  const WebSocketEndpoint endpoint_;
  const std::optional<HttpProxy> proxy_;
  asio::io_context ioc_{1};
  const std::unique_ptr<asio::ssl::context> tls_;  // wss only; outlives ws_
  std::optional<websocket::stream<NextLayer>> ws_;
  tcp::resolver resolver_{ioc_};
  asio::steady_timer deadline_{ioc_};     // bounds Open()
  asio::steady_timer wake_reader_{ioc_};  // the reader waits on it while the inbox is full
  asio::steady_timer wake_writer_{ioc_};  // the writer waits on it for messages or a ping
  asio::steady_timer wake_main_{ioc_};    // the watchdog waits on it
  Mutex join_mu_;                         // serialises starting and joining io_thread_
  std::thread io_thread_ GUARDED_BY(join_mu_);

  Mutex mu_;
  CondVar cv_;  // inbox_ or closed_ changed
  std::deque<std::string> outbox_ GUARDED_BY(mu_);
  size_t outbox_bytes_ GUARDED_BY(mu_) = 0;
  std::deque<std::string> inbox_ GUARDED_BY(mu_);
  size_t inbox_bytes_ GUARDED_BY(mu_) = 0;
  int close_code_ GUARDED_BY(mu_) = 0;  // 0 until Close() or a local failure
  std::string close_reason_ GUARDED_BY(mu_);
  bool close_taken_ GUARDED_BY(mu_) = false;  // the writer has it
  bool closed_by_user_ GUARDED_BY(mu_) = false;
  std::optional<Clock::time_point> close_requested_at_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;  // the connection is gone
  std::string closed_why_ GUARDED_BY(mu_);
  int peer_close_code_ GUARDED_BY(mu_) = 0;  // the platform's close frame's code
  bool poke_pending_ GUARDED_BY(mu_) = false;
  // NotifyOn's: the event, the send queue's low water, and whether the queue is over it.
  int notify_fd_ GUARDED_BY(mu_) = -1;
  size_t notify_low_bytes_ GUARDED_BY(mu_) = 0;
  size_t notify_low_messages_ GUARDED_BY(mu_) = 0;
  bool over_low_water_ GUARDED_BY(mu_) = false;

  // The I/O side (the thread running ioc_) only.
  bool reader_done_ = false;
  bool writer_done_ = false;
  bool reader_paused_ = false;
  bool stop_ = false;  // the socket was closed under the coroutines: leave
  bool timed_out_ = false;
  std::string failure_;  // why the connection ended, when it did not close cleanly
  Clock::time_point last_received_;
};

template <typename NextLayer>
Status ClientImpl<NextLayer>::Open() {
  std::optional<Status> result;
  asio::co_spawn(ioc_, Handshake(), [&result](std::exception_ptr e, Status status) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        status = Internal(std::string("the WebSocket handshake failed: ") + ex.what());
      } catch (...) {
        status = Internal("the WebSocket handshake failed");
      }
    }
    result = std::move(status);
  });
  deadline_.expires_after(options_.connect_timeout);
  deadline_.async_wait([this](error_code ec) {
    if (ec) return;  // cancelled: the handshake finished in time
    timed_out_ = true;
    resolver_.cancel();
    error_code ignored;
    tcp_stream().socket().close(ignored);
  });
  while (!result.has_value()) ioc_.run_one();
  deadline_.cancel();
  if (timed_out_) {
    return Unavailable("connecting to " + Describe() + " timed out after " +
                       std::to_string(options_.connect_timeout.count()) + "s");
  }
  if (!result->ok()) return *result;

  // From here the WebSocket stream's timer bounds the closing handshake and the watchdog
  // the rest; Beast requires the tcp_stream's own timer to be off.
  tcp_stream().expires_never();
  websocket::stream_base::timeout timeouts;
  timeouts.handshake_timeout = kCloseTimeout;
  timeouts.idle_timeout = websocket::stream_base::none();
  timeouts.keep_alive_pings = false;
  ws_->set_option(timeouts);
  ws_->read_message_max(options_.max_message_bytes);
  ws_->auto_fragment(false);
  // A client masks what it sends (RFC 6455), which Beast does in a buffer of this size, a
  // write to the socket for each: 4 KiB by default, four writes for a data frame.
  ws_->write_buffer_bytes(kMaskBufferBytes);
  ws_->text(!options_.binary);
  ws_->control_callback(
      [this](websocket::frame_type, beast::string_view) { last_received_ = Clock::now(); });
  last_received_ = Clock::now();
  asio::co_spawn(ioc_, ReadLoop(), [this](std::exception_ptr e) {
    if (e) failure_ = "internal error in the reader";
    reader_done_ = true;
    wake_writer_.cancel();
    wake_main_.cancel();
  });
  asio::co_spawn(ioc_, WriteLoop(), [this](std::exception_ptr e) {
    if (e && failure_.empty()) failure_ = "internal error in the writer";
    writer_done_ = true;
    wake_main_.cancel();
  });
  asio::co_spawn(ioc_, Watch(), [](std::exception_ptr) {});
  LogInfo("net.ws.connected", {{"endpoint", Describe()}, {"tls", kTls}});
  ioc_.restart();
  MutexLock lock(&join_mu_);
  io_thread_ = std::thread([this] {
    for (;;) {
      try {
        ioc_.run();
        return;
      } catch (const std::exception& e) {
        LogError("net.ws.event_loop_exception", {{"error", e.what()}});
      }
    }
  });
  return Status::Ok();
}

template <typename NextLayer>
asio::awaitable<Status> ClientImpl<NextLayer>::Handshake() {
  const std::string host = proxy_ ? proxy_->host : endpoint_.host;
  const std::string port = std::to_string(proxy_ ? proxy_->port : endpoint_.port);
  const std::string dialed = proxy_ ? "the proxy " + host + ":" + port : endpoint_.Authority();
  auto [rec, results] = co_await resolver_.async_resolve(host, port, kAwait);
  if (rec) co_return Unavailable("cannot resolve " + host + ": " + rec.message());
  auto [cec, connected] = co_await tcp_stream().async_connect(results, kAwait);
  if (cec) co_return Unavailable("cannot connect to " + dialed + ": " + cec.message());
  error_code ignored;
  tcp_stream().socket().set_option(tcp::no_delay(true), ignored);

  if (proxy_) {
    Status tunnel = co_await OpenTunnel();
    if (!tunnel.ok()) co_return tunnel;
  }

  if constexpr (kTls) {
    TlsStream& tls = ws_->next_layer();
    error_code not_ip;
    asio::ip::make_address(endpoint_.host, not_ip);
    // SNI carries names only, not addresses.
    if (not_ip && SSL_set_tlsext_host_name(tls.native_handle(), endpoint_.host.c_str()) != 1) {
      co_return Internal("cannot set the TLS server name");
    }
    if (!options_.insecure_skip_verify) {
      tls.set_verify_callback(asio::ssl::host_name_verification(endpoint_.host));
    }
    auto [hec] = co_await tls.async_handshake(asio::ssl::stream_base::client, kAwait);
    if (hec) {
      co_return Unavailable("TLS handshake with " + endpoint_.Authority() +
                            " failed: " + hec.message());
    }
  }

  ws_->set_option(
      websocket::stream_base::decorator([headers = options_.headers](websocket::request_type& req) {
        req.set(bhttp::field::user_agent, kUserAgent);
        for (const auto& [name, value] : headers) req.set(name, value);
      }));
  websocket::response_type res;
  const std::string host_header = endpoint_.HostHeader();
  auto [wec] = co_await ws_->async_handshake(res, host_header, endpoint_.target, kAwait);
  if (wec == websocket::error::upgrade_declined) co_return RefusalStatus(res);
  if (wec) {
    co_return Unavailable("WebSocket handshake with " + endpoint_.Authority() +
                          " failed: " + wec.message());
  }
  co_return Status::Ok();
}

template <typename NextLayer>
asio::awaitable<Status> ClientImpl<NextLayer>::OpenTunnel() {
  const std::string authority = endpoint_.Authority();
  const std::string proxy = proxy_->host + ":" + std::to_string(proxy_->port);
  bhttp::request<bhttp::empty_body> req{bhttp::verb::connect, authority, 11};
  req.set(bhttp::field::host, authority);
  req.set(bhttp::field::user_agent, kUserAgent);
  if (!proxy_->authorization.empty()) {
    req.set(bhttp::field::proxy_authorization, proxy_->authorization);
  }
  auto [wec, written] = co_await bhttp::async_write(tcp_stream(), req, kAwait);
  if (wec) co_return Unavailable("cannot talk to the proxy " + proxy + ": " + wec.message());
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::empty_body> parser;
  parser.skip(true);  // the answer to CONNECT has no body
  auto [rec, read] = co_await bhttp::async_read_header(tcp_stream(), buffer, parser, kAwait);
  if (rec) {
    co_return Unavailable("no answer from the proxy " + proxy + ": " + rec.message());
  }
  const auto& res = parser.get();
  if (res.result_int() < 200 || res.result_int() > 299) {
    co_return Unavailable("the proxy " + proxy + " refused a tunnel to " + authority + ": HTTP " +
                          std::to_string(res.result_int()) + " " + std::string(res.reason()));
  }
  // Neither TLS nor WebSocket lets the server speak first.
  if (buffer.size() != 0) {
    co_return Unavailable("the proxy " + proxy + " sent data before the tunnel opened");
  }
  co_return Status::Ok();
}

template <typename NextLayer>
asio::awaitable<void> ClientImpl<NextLayer>::ReadLoop() {
  for (;;) {
    for (;;) {
      bool full;
      {
        MutexLock lock(&mu_);
        full = InboxFullLocked();
      }
      if (!full || stop_) break;
      reader_paused_ = true;
      wake_reader_.expires_at(asio::steady_timer::time_point::max());
      co_await wake_reader_.async_wait(kAwait);
    }
    if (stop_) co_return;
    if (reader_paused_) {
      // The platform could not be heard while paused: the idle clock restarts.
      reader_paused_ = false;
      last_received_ = Clock::now();
    }
    // Beast answers pings, and on a message over read_message_max or a protocol error
    // sends the close frame (1009, 1002) and fails the read.
    // Each message is read into a string of its own, which goes to the inbox as it is.
    std::string message;
    auto buffer = asio::dynamic_buffer(message, options_.max_message_bytes);
    auto [ec, n] = co_await ws_->async_read(buffer, kAwait);
    if (ec) {
      bool closing;
      {
        MutexLock lock(&mu_);
        closing = close_taken_;
      }
      if (ec == websocket::error::message_too_big) {
        failure_ = "the platform sent a message over max_message_bytes (" +
                   std::to_string(options_.max_message_bytes) + ")";
      } else if (failure_.empty() && ec != websocket::error::closed &&
                 !(closing && (ec == asio::error::operation_aborted || ec == asio::error::eof))) {
        // (Once this side's close frame is out, Beast ends the read with one of those.)
        failure_ = "connection lost: " + ec.message();
      }
      co_return;
    }
    last_received_ = Clock::now();
    if (ws_->got_binary() != options_.binary) {
      MutexLock lock(&mu_);
      const char* kind = options_.binary ? "text" : "binary";
      if (failure_.empty()) failure_ = std::string("the platform sent a ") + kind + " message";
      if (close_code_ == 0) {
        close_code_ = 1003;
        close_reason_ = std::string(kind) + " messages are not accepted";
        close_requested_at_ = Clock::now();
        outbox_.clear();
        outbox_bytes_ = 0;
        wake_writer_.cancel();
      }
    } else {
      MutexLock lock(&mu_);
      inbox_bytes_ += message.size();
      inbox_.push_back(std::move(message));
      if (inbox_.size() == 1) NotifyLocked();
      cv_.SignalAll();
    }
  }
}

template <typename NextLayer>
asio::awaitable<void> ClientImpl<NextLayer>::WriteLoop() {
  auto next_ping = Clock::now() + options_.ping_interval;
  for (;;) {
    if (stop_ || reader_done_) co_return;
    std::string message;
    bool have_message = false;
    bool send_close = false;
    int code = 0;
    std::string reason;
    {
      MutexLock lock(&mu_);
      if (!outbox_.empty()) {
        message = std::move(outbox_.front());
        outbox_.pop_front();
        outbox_bytes_ -= message.size();
        have_message = true;
        if (over_low_water_ && outbox_bytes_ <= notify_low_bytes_ &&
            outbox_.size() <= notify_low_messages_) {
          over_low_water_ = false;
          NotifyLocked();
        }
      } else if (close_code_ != 0 && !close_taken_) {
        close_taken_ = true;
        send_close = true;
        code = close_code_;
        reason = close_reason_;
      }
    }
    if (have_message) {
      auto [ec, n] = co_await ws_->async_write(asio::buffer(message), kAwait);
      // The socket failed, or Beast is closing it: the reader sees the same and ends.
      if (ec) co_return;
    } else if (send_close) {
      // When Beast already sent a close frame (answering the platform's, or failing the
      // connection), it must not be sent twice.
      if (!ws_->is_open()) co_return;
      websocket::close_reason close(static_cast<websocket::close_code>(code),
                                    beast::string_view(reason));
      [[maybe_unused]] auto [ec] = co_await ws_->async_close(close, kAwait);
      co_return;
    }
    if (Clock::now() >= next_ping) {
      if (!ws_->is_open()) co_return;
      websocket::ping_data payload;
      auto [ec] = co_await ws_->async_ping(payload, kAwait);
      if (ec) co_return;
      next_ping = Clock::now() + options_.ping_interval;
      continue;
    }
    if (!have_message) {
      wake_writer_.expires_at(next_ping);
      co_await wake_writer_.async_wait(kAwait);
    }
  }
}

template <typename NextLayer>
asio::awaitable<void> ClientImpl<NextLayer>::Watch() {
  const auto idle_limit = kIdleIntervals * options_.ping_interval;
  while (!reader_done_ || !writer_done_) {
    const auto now = Clock::now();
    auto wake_at = asio::steady_timer::time_point::max();
    if (!stop_) {
      std::optional<Clock::time_point> closing;
      {
        MutexLock lock(&mu_);
        closing = close_requested_at_;
      }
      std::string give_up;
      if (closing) {
        const auto deadline = *closing + kCloseTimeout;
        if (now >= deadline) give_up = "the close handshake timed out";
        wake_at = std::min(wake_at, deadline);
      }
      if (!reader_paused_ && !reader_done_) {
        const auto deadline = last_received_ + idle_limit;
        if (now >= deadline) {
          give_up =
              "nothing received from the platform for " + std::to_string(idle_limit.count()) + "s";
        }
        wake_at = std::min(wake_at, deadline);
      }
      if (!give_up.empty()) {
        if (failure_.empty()) failure_ = give_up;
        // The pending reads and writes fail; the waiting coroutines see `stop_`.
        stop_ = true;
        error_code ignored;
        tcp_stream().socket().close(ignored);
        wake_reader_.cancel();
        wake_writer_.cancel();
        continue;
      }
    }
    wake_main_.expires_at(wake_at);
    co_await wake_main_.async_wait(kAwait);
  }
  error_code ignored;
  tcp_stream().socket().close(ignored);

  std::string why;
  {
    MutexLock lock(&mu_);
    const websocket::close_reason& peer = ws_->reason();
    if (closed_by_user_ && failure_.empty()) {
      why = "closed by this side";
    } else if (!failure_.empty()) {
      why = failure_;
    } else {
      peer_close_code_ = peer.code;
      why = "closed by the platform: " + std::to_string(peer.code) +
            (peer.reason.empty() ? "" : " " + std::string(peer.reason.data(), peer.reason.size()));
    }
    closed_ = true;
    closed_why_ = why;
    NotifyLocked();
    outbox_.clear();
    outbox_bytes_ = 0;
  }
  cv_.SignalAll();
  LogInfo("net.ws.closed", {{"endpoint", Describe()}, {"why", why}});
}

template <typename NextLayer>
void ClientImpl<NextLayer>::PokeLocked() {
  if (poke_pending_) return;
  poke_pending_ = true;
  asio::post(ioc_, [this] { OnPoke(); });
}

template <typename NextLayer>
void ClientImpl<NextLayer>::OnPoke() {
  {
    MutexLock lock(&mu_);
    poke_pending_ = false;
  }
  wake_reader_.cancel();
  wake_writer_.cancel();
  wake_main_.cancel();
}

template <typename NextLayer>
Status ClientImpl<NextLayer>::Send(std::string text) {
  MutexLock lock(&mu_);
  if (closed_) return Unavailable("the connection is closed: " + closed_why_);
  if (close_code_ != 0) return Unavailable("the connection is closing");
  if (outbox_.size() >= kMaxQueuedMessages || outbox_bytes_ + text.size() > kMaxQueuedBytes) {
    return ResourceExhausted("the send queue is full: the platform is not reading");
  }
  outbox_bytes_ += text.size();
  outbox_.push_back(std::move(text));
  if (outbox_bytes_ > notify_low_bytes_ || outbox_.size() > notify_low_messages_) {
    over_low_water_ = true;
  }
  PokeLocked();
  return Status::Ok();
}

template <typename NextLayer>
StatusOr<std::optional<std::string>> ClientImpl<NextLayer>::Receive(
    std::chrono::milliseconds timeout) {
  const auto until = Clock::now() + timeout;
  MutexLock lock(&mu_);
  while (inbox_.empty() && !closed_) {
    const auto now = Clock::now();
    if (now >= until) break;
    cv_.WaitFor(&mu_, until - now);
  }
  if (!inbox_.empty()) {
    const bool was_full = InboxFullLocked();
    std::string text = std::move(inbox_.front());
    inbox_.pop_front();
    inbox_bytes_ -= text.size();
    if (was_full) PokeLocked();  // the reader may be waiting
    return std::optional<std::string>(std::move(text));
  }
  if (closed_) return Unavailable(closed_why_);
  return std::optional<std::string>();
}

template <typename NextLayer>
void ClientImpl<NextLayer>::Close(int code, std::string reason) {
  {
    MutexLock lock(&mu_);
    if (!closed_ && close_code_ == 0) {
      close_code_ = SendableCloseCode(code);
      close_reason_ = TruncateCloseReason(std::move(reason));
      close_requested_at_ = Clock::now();
      closed_by_user_ = true;
      PokeLocked();
    }
  }
  MutexLock join_lock(&join_mu_);
  if (io_thread_.joinable() && io_thread_.get_id() != std::this_thread::get_id()) {
    io_thread_.join();
  }
}

template <typename NextLayer>
StatusOr<std::unique_ptr<WebSocketClient>> Open(WebSocketClientOptions options,
                                                WebSocketEndpoint endpoint,
                                                std::optional<HttpProxy> proxy,
                                                std::unique_ptr<asio::ssl::context> tls) {
  auto client = std::make_unique<ClientImpl<NextLayer>>(std::move(options), std::move(endpoint),
                                                        std::move(proxy), std::move(tls));
  GPUNEX_RETURN_IF_ERROR(client->Open());
  return std::unique_ptr<WebSocketClient>(std::move(client));
}

}  // namespace

StatusOr<std::unique_ptr<WebSocketClient>> WebSocketClient::Connect(
    const std::string& url, WebSocketClientOptions options) {
  GPUNEX_ASSIGN_OR_RETURN(WebSocketEndpoint endpoint, ParseWebSocketUrl(url));
  if (options.connect_timeout.count() <= 0 || options.ping_interval.count() <= 0) {
    return InvalidArgument("connect_timeout and ping_interval must be positive");
  }
  if (options.max_message_bytes == 0) return InvalidArgument("max_message_bytes must be positive");
  for (const auto& [name, value] : options.headers) {
    if (!IsSafeHeader(name, value)) {
      return InvalidArgument("header \"" + name + "\" has a bad name or value");
    }
  }
  GPUNEX_ASSIGN_OR_RETURN(std::optional<HttpProxy> proxy, ChooseProxy(endpoint, options.proxy_url));
  try {
    if (endpoint.tls) {
      GPUNEX_ASSIGN_OR_RETURN(std::unique_ptr<asio::ssl::context> tls, MakeTlsContext(options));
      return Open<TlsStream>(std::move(options), std::move(endpoint), std::move(proxy),
                             std::move(tls));
    }
    return Open<PlainStream>(std::move(options), std::move(endpoint), std::move(proxy), nullptr);
  } catch (const std::exception& e) {
    // Thread creation or the TLS library failed.
    return Internal(std::string("cannot open the WebSocket connection: ") + e.what());
  }
}

}  // namespace gpunex::net
