// WebSocketClient: one WebSocket connection dialled out, over ws:// or wss://, directly or
// through an HTTP proxy's CONNECT tunnel. The agent's channel to the platform (SPEC AGT-3:
// it dials out, so it works behind NAT) and the command-line client's exec and port
// forwarding use it. A client is one connection: to reconnect, make a new one.
//
// Connect() returns once the WebSocket handshake has completed. An internal I/O thread
// then runs the connection: it writes queued messages in order, keeps received messages
// until Receive() takes them, pings the platform every ping_interval (and answers its
// pings), and gives up on a platform from which nothing has arrived for three intervals.
//
// Boost.Beast and Asio stay inside websocket_client.cc; this header names no Boost type.
//
// Thread-safety: Send, Receive and Close may be called from any threads concurrently
// (typically one thread receiving while others send).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace gpunex::net {

struct WebSocketClientOptions {
  // Bounds everything up to the completed handshake: name resolution, TCP connect, proxy
  // CONNECT, TLS and WebSocket handshakes.
  std::chrono::seconds connect_timeout{15};
  // wss: PEM file of the CA certificates to trust; "" trusts the system store.
  std::string ca_file;
  // wss: accept any certificate. For tests only; logged as a warning on every connect.
  bool insecure_skip_verify = false;
  // "http://[user:password@]host[:port]". "" takes the proxy from the environment
  // (HTTPS_PROXY/https_proxy for wss, HTTP_PROXY/http_proxy for ws, honouring NO_PROXY);
  // see ChooseProxy in endpoint.h.
  std::string proxy_url;
  // A larger incoming message fails the connection (closed with 1009).
  size_t max_message_bytes = 1 << 20;
  // Extra headers of the upgrade request, e.g. {"Authorization", "Bearer <agent token>"}.
  std::vector<std::pair<std::string, std::string>> headers;
  // How often the client pings; also the unit of the idle timeout (three intervals).
  std::chrono::seconds ping_interval{20};
  // Every message, both ways, is a binary one (the data channel); a text message from
  // the platform then fails the connection as a binary one does otherwise.
  bool binary = false;
};

class WebSocketClient {
 public:
  // Closes the connection (as Close()) if it is open.
  virtual ~WebSocketClient() = default;

  // Connects to `url`: ws://host[:port]/path, wss://..., or http(s):// meaning ws(s)://.
  // Through a proxy (WebSocketClientOptions::proxy_url or the environment) the client
  // opens a CONNECT tunnel to host:port first (with Proxy-Authorization: Basic when the
  // proxy URL has user:password), then speaks TLS and WebSocket inside it.
  //
  // Errors, so that the caller can tell a revoked token from a network outage:
  //   kUnauthenticated   the platform answered the upgrade with 401 (bad or revoked
  //                      credentials); the message has the platform's error message.
  //   kPermissionDenied  403, likewise.
  //   kNotFound          404 (no such resource, or not the caller's).
  //   kFailedPrecondition another 4xx answer (wrong URL or an incompatible platform),
  //                      with its status and message.
  //   kUnavailable       anything transient: resolution, connection, timeout, proxy
  //                      refusal, TLS failure (including certificate verification), 5xx
  //                      and 429 answers.
  //   kInvalidArgument   a malformed url or proxy URL, or an unreadable ca_file.
  static StatusOr<std::unique_ptr<WebSocketClient>> Connect(const std::string& url,
                                                            WebSocketClientOptions options);

  // Queues `text` as one text message; messages go out in the order of the Send calls.
  // Returns at once. Fails with kUnavailable (saying why) once the connection is closed
  // or closing, and with kResourceExhausted, dropping the message, when 4 MiB or 1024
  // messages are already waiting (the platform is not reading).
  virtual Status Send(std::string text) = 0;

  // The bytes and the messages queued and not yet written to the socket: a sender that
  // paces itself keeps these low (the data channel stops at 1 MiB or 256 messages).
  virtual size_t QueuedBytes() = 0;
  virtual size_t QueuedMessages() = 0;

  // The next received message, waiting up to `timeout` for one; nullopt when none
  // arrived in time. Messages received before the connection closed are still returned;
  // after them, kUnavailable with the reason ("closed by the platform: 1001 going away",
  // "connection lost: ...", "closed by this side").
  virtual StatusOr<std::optional<std::string>> Receive(std::chrono::milliseconds timeout) = 0;

  // Makes the client also signal `event_fd` (an eventfd that outlives the client: it
  // writes 1 to it) when a message arrives where none waited, when the send queue, having
  // been over `low_bytes` or `low_messages`, drains to both, and when the connection
  // closes. One poll loop then waits on its sockets and this client alike, with no thread
  // of its own to call Receive (the data channel). A caller that uses it takes every
  // waiting message (Receive with a zero timeout until none) each time it wakes.
  virtual void NotifyOn(int event_fd, size_t low_bytes, size_t low_messages) = 0;

  // The code of the close frame the platform sent, once the connection has closed that
  // way; 0 while it is open, and when this side closed it or the connection was lost.
  virtual int PeerCloseCode() = 0;

  // Sends the messages already queued, then a close frame with `code` and `reason`, and
  // waits (up to 5 seconds) for the close handshake and the I/O thread to end. Later
  // Sends fail; Receive still returns what had arrived. Idempotent.
  virtual void Close(int code = 1000, std::string reason = "") = 0;
};

}  // namespace gpunex::net
