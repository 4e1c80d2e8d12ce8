// WebSocket endpoints of the HTTP server (RFC 6455), message-agnostic: each message is
// one text frame sequence carrying whatever the application puts in it (JSON for the
// agent channel). The server owns the sockets, framing, keepalive pings and timeouts; the
// application sees whole messages.
//
// A route is registered in ServerOptions::websocket_routes under an exact path with a
// WebSocketAcceptor. For an upgrade request on that path the server runs the acceptor on
// a worker thread; an error Status refuses the upgrade with the usual JSON error response
// (401, 403, ...), a session accepts it. The server then completes the handshake and, for
// the life of the connection, calls the session's OnMessage for each text message and
// finally OnClose. The application talks back through the WebSocketConnection it was
// given.
//
// A session may take binary messages too (AcceptsBinary; OnBinary, SendBinary): the
// agent's data channel and the byte streams to rentals' ports carry bytes, and pace
// themselves with QueuedBytes/NotifyWhenWritable (sending) and PauseReading (receiving),
// so that neither side's memory grows with a peer that is slower than the other.
//
// The server closes a connection by itself, with the close code in parentheses, when: a
// message is larger than ServerOptions::ws_max_message_bytes (1009); a binary message
// arrives on a session that does not accept them (1003); a frame breaks the protocol (1002); the
// send queue overflows (1008); a handler throws (1011); the server shuts down (1001, "going away");
// nothing (not even a pong) has arrived for three ping intervals (no close frame: the socket is
// closed).
//
// Beast and Asio stay inside the server's implementation (internal/websocket_connection.cc);
// this header names no Boost type.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "platform/http/http.h"

namespace gpunex::platform::http {

// The server's end of one WebSocket connection, as the application sees it.
//
// Thread-safety: all methods may be called from any thread, concurrently. The object may
// outlive the connection (and the Server): Send then returns false and Close does nothing.
class WebSocketConnection {
 public:
  virtual ~WebSocketConnection() = default;

  // Queues `text` as one text message. Messages go out in the order Send was called.
  // Returns false, dropping the message, once the connection is closed or closing.
  // The queue is bounded (4 MiB and 1024 messages): a Send that would exceed it closes the
  // connection with 1008 and returns false, so a peer that stops reading cannot make the
  // server's memory grow. (So a single message over 4 MiB always closes the connection.) Messages
  // sent from the acceptor, before the handshake has completed, go out right after it.
  virtual bool Send(std::string text) = 0;
  // As Send, as one binary message.
  virtual bool SendBinary(std::string bytes) = 0;

  // The bytes of the messages queued and not yet written to the socket.
  virtual size_t QueuedBytes() const = 0;
  // Whether the queue is at or below kWebSocketWritableBytes and
  // kWebSocketWritableMessages: a sender that queues only while it is never fills it.
  virtual bool Writable() const = 0;
  // Asks for one OnWritable call once Writable() holds (soon, when it already does).
  virtual void NotifyWhenWritable() = 0;
  // While paused, no OnMessage or OnBinary is called and the server reads nothing more
  // from the socket once a small backlog has arrived (TCP pushes back on the peer); the
  // idle timeout does not run. Resuming delivers what waited. Not a close: pings go on.
  virtual void PauseReading(bool paused) = 0;

  // Starts the closing handshake with `code` (1000 normal, 1008 policy violation, 4000-4999
  // application codes; codes a close frame may not carry, such as 1005 or 1006, become
  // 1000) and `reason` (cut to 123 bytes).
  // Messages already queued go out first; later Sends return false. OnClose follows when
  // the connection is gone. Idempotent: only the first call's code and reason are sent.
  virtual void Close(int code, std::string reason) = 0;

  // The peer's IP address, as in Request::remote_addr.
  virtual std::string RemoteAddr() const = 0;

  // For an acceptor: the subprotocol the handshake's answer names (Sec-WebSocket-Protocol),
  // one of those the request offered (its "sec-websocket-protocol" header); none unless
  // set.
  virtual void SetSubprotocol(std::string protocol) = 0;
  virtual std::string Subprotocol() const = 0;
};

// The send queue's level at or below which OnWritable is called: bytes and messages (the
// queue holds at most 4 MiB and 1024 messages).
inline constexpr size_t kWebSocketWritableBytes = 1 << 20;
inline constexpr size_t kWebSocketWritableMessages = 256;

// The application's end of one WebSocket connection.
class WebSocketSession {
 public:
  virtual ~WebSocketSession() = default;

  // One whole text message. Called on a worker-pool thread (so it may block on the
  // database), serially per connection: never concurrently with another OnMessage or
  // OnClose of the same connection, and in arrival order. While it runs the server keeps
  // reading only until a small backlog has built up, then stops reading (TCP pushes back
  // on the peer). An exception is logged and closes the connection with 1011.
  virtual void OnMessage(std::string text) = 0;

  // Whether binary messages are taken (OnBinary); when not, one closes the connection
  // with 1003. Asked once, when the session is accepted.
  virtual bool AcceptsBinary() const { return false; }
  // One whole binary message, called as OnMessage is (serially with it, in order).
  virtual void OnBinary(std::string bytes) { (void)bytes; }
  // The send queue came down to kWebSocketWritableBytes after NotifyWhenWritable.
  // Called as OnMessage is (serially with it); not after OnClose.
  virtual void OnWritable() {}

  // The connection is closed, for whatever reason (either side closed it, it failed, it
  // timed out, the server shut down). Called exactly once, after the last OnMessage, on a
  // worker-pool thread; the server's graceful shutdown waits for it (up to its grace
  // period).
  virtual void OnClose() = 0;
};

// Decides whether to accept an upgrade request on a WebSocket route. `request` has the
// method, target, path, query, headers (e.g. "authorization") and remote address of the
// upgrade request. `connection` may be kept (e.g. handed to the session) and used at once.
// Returns the session on success; an error Status refuses the upgrade and is answered with
// the normal JSON error response (ErrorResponse), with no upgrade. Runs on a worker
// thread; exceptions are answered with a 500. A null session counts as an internal error.
using WebSocketAcceptor = std::function<StatusOr<std::shared_ptr<WebSocketSession>>(
    const Request& request, std::shared_ptr<WebSocketConnection> connection)>;

}  // namespace gpunex::platform::http
