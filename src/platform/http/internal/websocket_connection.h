// The server's side of a WebSocket connection (websocket.h): WsConnection, the object the
// application and the connection's coroutines share, and ServeWebSocket, which runs the
// connection once an upgrade request has been accepted.
//
// A WebSocket session is three coroutines on the connection's strand: a reader (hands each
// message to the worker pool, one at a time per connection), a writer (the only one that
// writes: queued messages, pings, the close frame) and a watchdog (the session coroutine
// itself: idle and closing deadlines). The application's threads talk to them through
// WsConnection: its send queue (filled by the application, emptied by the writer), the
// requested close, and its inbox of received messages (filled by the reader, emptied by a
// task on the worker pool that calls the WebSocketSession serially).
//
// Thread-safety: WsConnection's methods may be called from any thread; its state is
// guarded by its own mutex, and it wakes the coroutines by posting to their strand, only
// while they are attached (Attach() .. Detach()), so a connection that outlives its
// session, or the server, touches neither. ServeWebSocket and RunAcceptor run on the
// connection's strand.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/thread_annotations.h"
#include "platform/http/http.h"
#include "platform/http/internal/http_io.h"
#include "platform/http/internal/server_state.h"
#include "platform/http/websocket.h"

namespace gpunex::platform::http::internal {

// One WebSocket connection as the application and the session coroutines share it.
//
// The coroutines wait on timers of the session frame; Poke cancels them from any thread
// by posting to the strand, and only while the frame is attached.
class WsConnection final : public WebSocketConnection,
                           public std::enable_shared_from_this<WsConnection> {
 public:
  enum class OutKind { kNothing, kMessage, kClose };
  struct Outgoing {
    OutKind kind = OutKind::kNothing;
    std::string text;     // kMessage: the message; kClose: the reason
    int code = 0;         // kClose
    bool binary = false;  // kMessage: a binary one
  };
  // A received message.
  struct Incoming {
    std::string data;
    bool binary = false;
  };

  // `strand` is the connection's; `pool` runs OnMessage and OnClose.
  WsConnection(asio::any_io_executor strand, asio::thread_pool::executor_type pool,
               std::string remote)
      : pool_(std::move(pool)), remote_(std::move(remote)), strand_(std::move(strand)) {}

  bool Send(std::string text) override EXCLUDES(mu_);
  bool SendBinary(std::string bytes) override EXCLUDES(mu_);
  size_t QueuedBytes() const override EXCLUDES(mu_);
  bool Writable() const override EXCLUDES(mu_);
  void NotifyWhenWritable() override EXCLUDES(mu_);
  void PauseReading(bool paused) override EXCLUDES(mu_);
  void Close(int code, std::string reason) override EXCLUDES(mu_);
  std::string RemoteAddr() const override { return remote_; }
  void SetSubprotocol(std::string protocol) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    subprotocol_ = std::move(protocol);
  }
  std::string Subprotocol() const override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return subprotocol_;
  }

  // A close decided by the server (shutdown, protocol, a throwing handler): unlike Close(),
  // the messages still queued are dropped.
  void Abort(int code, std::string reason) EXCLUDES(mu_);

  // The accepted application session. REQUIRES: called once, before Deliver().
  void Start(std::shared_ptr<WebSocketSession> session) EXCLUDES(mu_);

  // On the strand: `signals` (timers of the session frame) are cancelled by Poke() from
  // now until Detach().
  void Attach(std::vector<asio::steady_timer*> signals) EXCLUDES(mu_);

  // Ends the connection for the application: Send() fails from now on and Poke() stops.
  // Calls OnClose here unless it was called or a Dispatch() is running (which will):
  // the session ended without Finish(), or the server is being destroyed and its pool,
  // already joined, dropped the Dispatch() that would have called it.
  void Detach() EXCLUDES(mu_);

  // For the writer: the next message, else the requested close frame (once), else nothing.
  Outgoing TakeOutgoing() EXCLUDES(mu_);

  // When a close was first requested, if it was.
  std::optional<std::chrono::steady_clock::time_point> close_requested_at() const EXCLUDES(mu_);

  // Whether the reader should wait (for OnMessage to catch up, or for the application to
  // resume reading) before reading more.
  bool ReaderShouldWait() const EXCLUDES(mu_);

  // Whether the session takes binary messages (asked of it in Start()).
  bool accepts_binary() const EXCLUDES(mu_);

  // A received message for OnMessage or OnBinary; dropped once a close has been requested.
  void Deliver(Incoming message) EXCLUDES(mu_);

  // The connection is closed: no more Sends; OnClose follows the messages still in the
  // inbox. on_close_done() turns true (with a Poke) once it has returned.
  void Finish() EXCLUDES(mu_);

  bool on_close_done() const EXCLUDES(mu_);

  // The code of the close this side requested, 0 when none was.
  int requested_close_code() const EXCLUDES(mu_);

 private:
  // The pool task that runs Dispatch() (websocket_connection.cc).
  class DispatchTask;

  bool Queue(std::string data, bool binary) EXCLUDES(mu_);
  bool InboxFullLocked() const REQUIRES(mu_);
  void RequestCloseLocked(int code, std::string reason, bool drop_queue) REQUIRES(mu_);
  void PokeLocked() REQUIRES(mu_);
  void OnPoke() EXCLUDES(mu_);
  void ScheduleDispatchLocked() REQUIRES(mu_);
  void DispatchDropped() EXCLUDES(mu_);
  // Marks OnWritable due when it was asked for and the queue is low enough.
  void CheckWritableLocked() REQUIRES(mu_);
  // On the pool: calls OnWritable when due and OnMessage/OnBinary for queued messages,
  // then OnClose once finished.
  void Dispatch() EXCLUDES(mu_);

  // (A thread_pool executor holds no reference that could outlive the pool.)
  const asio::thread_pool::executor_type pool_;
  const std::string remote_;

  mutable Mutex mu_;
  std::string subprotocol_ GUARDED_BY(mu_);
  // Sending.
  std::deque<Outgoing> outbox_ GUARDED_BY(mu_);
  size_t outbox_bytes_ GUARDED_BY(mu_) = 0;
  bool send_closed_ GUARDED_BY(mu_) = false;  // Send() refuses
  int close_code_ GUARDED_BY(mu_) = 0;        // 0 until a close is requested
  std::string close_reason_ GUARDED_BY(mu_);
  bool close_taken_ GUARDED_BY(mu_) = false;  // the writer has it
  std::optional<std::chrono::steady_clock::time_point> close_requested_at_ GUARDED_BY(mu_);
  // Receiving.
  std::shared_ptr<WebSocketSession> session_ GUARDED_BY(mu_);  // null after OnClose
  std::deque<Incoming> inbox_ GUARDED_BY(mu_);
  size_t inbox_bytes_ GUARDED_BY(mu_) = 0;
  bool accepts_binary_ GUARDED_BY(mu_) = false;
  bool read_paused_ GUARDED_BY(mu_) = false;    // PauseReading(true)
  bool want_writable_ GUARDED_BY(mu_) = false;  // NotifyWhenWritable() not answered yet
  bool writable_due_ GUARDED_BY(mu_) = false;   // OnWritable is to be called
  bool dispatching_ GUARDED_BY(mu_) = false;    // a DispatchTask is queued or running
  bool finished_ GUARDED_BY(mu_) = false;       // OnClose is due after the inbox
  bool on_close_called_ GUARDED_BY(mu_) = false;
  bool on_close_done_ GUARDED_BY(mu_) = false;
  // Waking the session coroutines. The strand is dropped by Detach(): a copy kept by a
  // connection that outlives the server would outlive its io_context.
  asio::any_io_executor strand_ GUARDED_BY(mu_);
  std::vector<asio::steady_timer*> signals_ GUARDED_BY(mu_);
  bool attached_ GUARDED_BY(mu_) = false;
  bool poke_pending_ GUARDED_BY(mu_) = false;
};

// Serves an accepted WebSocket upgrade until the connection is closed and the session's
// OnClose has returned. `upgrade` is the upgrade request (its body already read);
// `ws_conn` has been Start()ed with the accepted session. Instantiated for PlainStream and
// TlsStream.
template <typename Stream>
asio::awaitable<void> ServeWebSocket(ServerState& state, Stream& stream, Connection& conn,
                                     const bhttp::request<bhttp::string_body>& upgrade,
                                     std::shared_ptr<WsConnection> ws_conn);
extern template asio::awaitable<void> ServeWebSocket<PlainStream>(
    ServerState&, PlainStream&, Connection&, const bhttp::request<bhttp::string_body>&,
    std::shared_ptr<WsConnection>);
extern template asio::awaitable<void> ServeWebSocket<TlsStream>(
    ServerState&, TlsStream&, Connection&, const bhttp::request<bhttp::string_body>&,
    std::shared_ptr<WsConnection>);

// Answers an upgrade request on a WebSocket route by running `acceptor` on the worker
// pool: the session on success, otherwise the refusal to send (the acceptor's error, or
// 500 when it threw or returned null). `acceptor` must outlive the call (it lives in the
// server's options).
asio::awaitable<std::pair<Status, std::shared_ptr<WebSocketSession>>> RunAcceptor(
    ServerState& state, const WebSocketAcceptor& acceptor, std::shared_ptr<Request> req,
    std::shared_ptr<WsConnection> ws_conn);

}  // namespace gpunex::platform::http::internal
