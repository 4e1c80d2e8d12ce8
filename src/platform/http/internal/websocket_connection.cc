// WebSocket connections of the HTTP server: WsConnection, and the reader, writer and
// watchdog coroutines of a connection (see websocket_connection.h).
#include "platform/http/internal/websocket_connection.h"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <exception>

#include "common/log.h"

namespace gpunex::platform::http::internal {
namespace {

namespace websocket = boost::beast::websocket;

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

}  // namespace

// When the pool drops it unrun (the server is being destroyed), it says so, so that
// Detach() knows OnClose is still owed.
class WsConnection::DispatchTask {
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

bool WsConnection::Send(std::string text) { return Queue(std::move(text), /*binary=*/false); }

bool WsConnection::SendBinary(std::string bytes) {
  return Queue(std::move(bytes), /*binary=*/true);
}

bool WsConnection::Queue(std::string data, bool binary) {
  MutexLock lock(&mu_);
  if (send_closed_) return false;
  if (outbox_.size() >= kWsMaxQueuedMessages || outbox_bytes_ + data.size() > kWsMaxQueuedBytes) {
    LogWarn("http.websocket_send_queue_full", {{"remote", remote_},
                                               {"queued_messages", outbox_.size()},
                                               {"queued_bytes", outbox_bytes_}});
    RequestCloseLocked(1008, "send queue full", /*drop_queue=*/true);
    return false;
  }
  outbox_bytes_ += data.size();
  outbox_.push_back({OutKind::kMessage, std::move(data), 0, binary});
  PokeLocked();
  return true;
}

size_t WsConnection::QueuedBytes() const {
  MutexLock lock(&mu_);
  return outbox_bytes_;
}

bool WsConnection::Writable() const {
  MutexLock lock(&mu_);
  return outbox_bytes_ <= kWebSocketWritableBytes && outbox_.size() <= kWebSocketWritableMessages;
}

void WsConnection::NotifyWhenWritable() {
  MutexLock lock(&mu_);
  want_writable_ = true;
  CheckWritableLocked();
}

void WsConnection::PauseReading(bool paused) {
  MutexLock lock(&mu_);
  if (read_paused_ == paused) return;
  read_paused_ = paused;
  if (!paused) {
    if (!inbox_.empty()) ScheduleDispatchLocked();
    PokeLocked();  // the reader may be waiting
  }
}

void WsConnection::CheckWritableLocked() {
  if (!want_writable_ || outbox_bytes_ > kWebSocketWritableBytes ||
      outbox_.size() > kWebSocketWritableMessages || finished_) {
    return;
  }
  want_writable_ = false;
  writable_due_ = true;
  ScheduleDispatchLocked();
}

void WsConnection::Close(int code, std::string reason) {
  MutexLock lock(&mu_);
  RequestCloseLocked(code, std::move(reason), /*drop_queue=*/false);
}

void WsConnection::Abort(int code, std::string reason) {
  MutexLock lock(&mu_);
  RequestCloseLocked(code, std::move(reason), /*drop_queue=*/true);
}

void WsConnection::Start(std::shared_ptr<WebSocketSession> session) {
  const bool binary = session != nullptr && session->AcceptsBinary();
  MutexLock lock(&mu_);
  session_ = std::move(session);
  accepts_binary_ = binary;
}

bool WsConnection::accepts_binary() const {
  MutexLock lock(&mu_);
  return accepts_binary_;
}

void WsConnection::Attach(std::vector<asio::steady_timer*> signals) {
  MutexLock lock(&mu_);
  signals_ = std::move(signals);
  attached_ = true;
}

void WsConnection::Detach() {
  std::shared_ptr<WebSocketSession> orphan;
  {
    MutexLock lock(&mu_);
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

WsConnection::Outgoing WsConnection::TakeOutgoing() {
  MutexLock lock(&mu_);
  Outgoing out;
  if (!outbox_.empty()) {
    out = std::move(outbox_.front());
    outbox_.pop_front();
    outbox_bytes_ -= out.text.size();
    CheckWritableLocked();
  } else if (close_code_ != 0 && !close_taken_) {
    close_taken_ = true;
    out.kind = OutKind::kClose;
    out.code = close_code_;
    out.text = close_reason_;
  }
  return out;
}

std::optional<std::chrono::steady_clock::time_point> WsConnection::close_requested_at() const {
  MutexLock lock(&mu_);
  return close_requested_at_;
}

bool WsConnection::ReaderShouldWait() const {
  MutexLock lock(&mu_);
  return read_paused_ || InboxFullLocked();
}

void WsConnection::Deliver(Incoming message) {
  MutexLock lock(&mu_);
  if (close_code_ != 0 || finished_) return;
  inbox_bytes_ += message.data.size();
  inbox_.push_back(std::move(message));
  if (!read_paused_) ScheduleDispatchLocked();
}

void WsConnection::Finish() {
  MutexLock lock(&mu_);
  send_closed_ = true;
  outbox_.clear();
  outbox_bytes_ = 0;
  finished_ = true;
  ScheduleDispatchLocked();
}

bool WsConnection::on_close_done() const {
  MutexLock lock(&mu_);
  return on_close_done_;
}

int WsConnection::requested_close_code() const {
  MutexLock lock(&mu_);
  return close_code_;
}

bool WsConnection::InboxFullLocked() const {
  return inbox_.size() >= kWsMaxInboxMessages || inbox_bytes_ >= kWsMaxInboxBytes;
}

void WsConnection::RequestCloseLocked(int code, std::string reason, bool drop_queue) {
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

void WsConnection::PokeLocked() {
  if (!attached_ || poke_pending_) return;
  poke_pending_ = true;
  asio::post(strand_, [self = shared_from_this()] { self->OnPoke(); });
}

void WsConnection::OnPoke() {
  std::vector<asio::steady_timer*> signals;
  {
    MutexLock lock(&mu_);
    poke_pending_ = false;
    signals = signals_;
  }
  // On the strand, where Detach() also runs: the timers are alive.
  for (asio::steady_timer* timer : signals) timer->cancel();
}

void WsConnection::ScheduleDispatchLocked() {
  if (dispatching_) return;
  dispatching_ = true;
  asio::post(pool_, DispatchTask(shared_from_this()));
}

void WsConnection::DispatchDropped() {
  MutexLock lock(&mu_);
  dispatching_ = false;
}

void WsConnection::Dispatch() {
  for (int i = 0; i < kWsDispatchBatch; ++i) {
    Incoming message;
    std::shared_ptr<WebSocketSession> session;
    enum class Call { kWritable, kMessage, kClose };
    Call call = Call::kMessage;
    {
      MutexLock lock(&mu_);
      if (finished_ && read_paused_) {
        // Nobody will resume reading a closed connection: what waited is dropped.
        inbox_.clear();
        inbox_bytes_ = 0;
      }
      if (writable_due_ && !finished_) {
        writable_due_ = false;
        call = Call::kWritable;
        session = session_;
      } else if (!inbox_.empty() && !read_paused_) {
        const bool was_full = InboxFullLocked();
        message = std::move(inbox_.front());
        inbox_.pop_front();
        inbox_bytes_ -= message.data.size();
        if (was_full) PokeLocked();  // the reader may be waiting
        call = Call::kMessage;
        session = session_;
      } else if (finished_ && !on_close_called_) {
        on_close_called_ = true;
        call = Call::kClose;
        // Dropping the reference breaks the cycle session -> connection -> session.
        session = std::move(session_);
      } else {
        dispatching_ = false;
        return;
      }
    }
    if (call == Call::kClose) {
      if (session != nullptr) CallOnClose(*session, remote_);
      session.reset();
      MutexLock lock(&mu_);
      on_close_done_ = true;
      dispatching_ = false;
      PokeLocked();
      return;
    }
    if (session == nullptr) continue;
    try {
      if (call == Call::kWritable) {
        session->OnWritable();
      } else if (message.binary) {
        session->OnBinary(std::move(message.data));
      } else {
        session->OnMessage(std::move(message.data));
      }
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

namespace {

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
asio::awaitable<void> WsReader(WsStream& ws, WsConnection& conn, WsLoop& loop,
                               size_t max_message_bytes) {
  for (;;) {
    while (!loop.stop && conn.ReaderShouldWait()) {
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
    // Each message is read into a string of its own, which the application gets as it is.
    std::string message;
    auto buffer = asio::dynamic_buffer(message, max_message_bytes);
    auto [ec, n] = co_await ws.async_read(buffer, kAwait);
    if (ec) co_return;
    loop.last_received = std::chrono::steady_clock::now();
    if (ws.got_binary() && !conn.accepts_binary()) {
      conn.Abort(1003, "binary messages are not accepted");
    } else {
      conn.Deliver({std::move(message), ws.got_binary()});
    }
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
      ws.binary(out.binary);
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

// The watchdog of a WebSocket session: returns once its reader and writer are done,
// closing the socket under them when the peer has been silent for too long or a close
// requested by this side has not completed within read_timeout.
asio::awaitable<void> WatchWebSocket(const ServerOptions& options, beast::tcp_stream& tcp_stream,
                                     WsConnection& ws_conn, WsLoop& loop,
                                     const std::string& remote) {
  const auto idle_limit = kWsIdleIntervals * options.ws_ping_interval;
  while (!loop.reader_done || !loop.writer_done) {
    const auto now = std::chrono::steady_clock::now();
    auto wake_at = asio::steady_timer::time_point::max();
    if (!loop.stop) {
      const char* give_up = nullptr;
      if (auto since = ws_conn.close_requested_at()) {
        const auto deadline = *since + options.read_timeout;
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

}  // namespace

template <typename Stream>
asio::awaitable<void> ServeWebSocket(ServerState& state, Stream& stream, Connection& conn,
                                     const bhttp::request<bhttp::string_body>& upgrade,
                                     std::shared_ptr<WsConnection> ws_conn) {
  const ServerOptions& options = state.options;
  beast::tcp_stream& tcp_stream = beast::get_lowest_layer(stream);
  // From here on the WebSocket stream's timer bounds the handshakes and the watchdog the
  // rest; Beast requires the tcp_stream's own timer to be off.
  tcp_stream.expires_never();
  WsLoop loop(conn.executor);
  // Declared after `loop`, whose timers and fields its callbacks use, so destroyed first.
  websocket::stream<Stream&> ws(stream);
  websocket::stream_base::timeout timeouts;
  timeouts.handshake_timeout = options.read_timeout;  // the closing handshake too
  timeouts.idle_timeout = websocket::stream_base::none();
  timeouts.keep_alive_pings = false;  // the writer pings on its own schedule
  ws.set_option(timeouts);
  ws.set_option(websocket::stream_base::decorator(
      [protocol = ws_conn->Subprotocol()](websocket::response_type& res) {
        res.erase(bhttp::field::server);
        if (!protocol.empty()) res.set(bhttp::field::sec_websocket_protocol, protocol);
      }));
  ws.read_message_max(options.ws_max_message_bytes);
  ws.auto_fragment(false);
  ws.text(true);
  WsAttachment attachment(ws_conn, {&loop.wake_main, &loop.wake_reader, &loop.wake_writer});

  auto [ec] = co_await ws.async_accept(upgrade, kAwait);
  if (!ec) {
    LogInfo("http.websocket_open",
            {{"remote", ws_conn->RemoteAddr()}, {"target", std::string(upgrade.target())}});
    conn.going_away = [ws_conn] { ws_conn->Abort(1001, "going away"); };
    // Drain() posted its going_away before there was one.
    if (state.draining) ws_conn->Abort(1001, "going away");
    loop.last_received = std::chrono::steady_clock::now();
    ws.control_callback([&loop](websocket::frame_type, beast::string_view) {
      loop.last_received = std::chrono::steady_clock::now();
    });
    asio::co_spawn(conn.executor, WsReader(ws, *ws_conn, loop, options.ws_max_message_bytes),
                   [&loop](std::exception_ptr e) {
                     LogIfFailed(e, "websocket reader");
                     loop.reader_done = true;
                     loop.wake_writer.cancel();
                     loop.wake_main.cancel();
                   });
    asio::co_spawn(conn.executor, WsWriter(ws, *ws_conn, loop, options.ws_ping_interval),
                   [&loop](std::exception_ptr e) {
                     LogIfFailed(e, "websocket writer");
                     loop.writer_done = true;
                     loop.wake_main.cancel();
                   });
    co_await WatchWebSocket(options, tcp_stream, *ws_conn, loop, ws_conn->RemoteAddr());
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

template asio::awaitable<void> ServeWebSocket<PlainStream>(
    ServerState&, PlainStream&, Connection&, const bhttp::request<bhttp::string_body>&,
    std::shared_ptr<WsConnection>);
template asio::awaitable<void> ServeWebSocket<TlsStream>(ServerState&, TlsStream&, Connection&,
                                                         const bhttp::request<bhttp::string_body>&,
                                                         std::shared_ptr<WsConnection>);

asio::awaitable<std::pair<Status, std::shared_ptr<WebSocketSession>>> RunAcceptor(
    ServerState& state, const WebSocketAcceptor& acceptor, std::shared_ptr<Request> req,
    std::shared_ptr<WsConnection> ws_conn) {
  using Result = std::pair<Status, std::shared_ptr<WebSocketSession>>;
  // As in the session's RunHandler. The result is a pair because co_spawn needs a
  // default-constructible one. `acceptor` lives in the options, as long as the server.
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
  auto on_pool = asio::co_spawn(state.pool, std::move(invoke), asio::use_awaitable);
  Result result = co_await std::move(on_pool);
  co_return result;
}

}  // namespace gpunex::platform::http::internal
