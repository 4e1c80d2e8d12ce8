// The HTTP server as a streaming reverse proxy (the access listener of issue 25,
// docs/access.md): a server whose ServerOptions::proxy is set hands every request to it
// instead of to a Handler, and relays the exchange to an upstream byte stream (a relay
// stream to a port of a rental's container) and back.
//
// For each request the server reads the header, then runs the ProxyAuthorizer on a worker
// thread (it may read the database) with the request and its header fields. The
// authorizer refuses (an error Status, answered in the API's error shape), answers by
// itself (ProxyGrant::response: a redirect that sets a cookie), or grants: it names the
// target and the header fields the upstream gets (so it decides what is stripped and
// added) and opens the upstream. The proxy then:
//   - writes the request line and those fields upstream, with the request's own framing
//     (Content-Length or chunked) and "Connection: close" (or the upgrade's Connection
//     and Upgrade), and relays the body as it arrives, never holding it whole;
//   - reads the response's header, passes on 1xx answers, rewrites the hop-by-hop fields
//     (Connection, Keep-Alive) for the client's connection and relays the body as it
//     comes, byte for byte, whatever its framing; a response without a length ends with
//     the upstream and closes the client's connection;
//   - after a 101 answer to an upgrade request (WebSocket), relays bytes both ways until
//     each side has finished;
//   - keeps the client's connection for another request when both the request and the
//     response say where they end.
// There is no limit on a body's size or an exchange's length: a transfer that makes no
// progress for ServerOptions::idle_timeout is cut. Memory per exchange stays bounded:
// the proxy reads from one side only as fast as the other side takes the bytes.
// An upstream that ends before its answer has begun is answered with the status it gives
// (502: nothing listens there, 410: it is gone); one that ends in the middle of an answer
// closes the client's connection (the client sees a truncated body).
//
// Beast and Asio stay inside internal/proxy.cc; this header names no Boost type.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "platform/http/http.h"

namespace gpunex::platform::http {

// Header fields in the order they arrived (names as sent), repeats kept.
using HeaderFields = std::vector<std::pair<std::string, std::string>>;

// How an upstream stream ended.
struct UpstreamEnd {
  // Both sides finished and everything was read.
  bool clean = false;
  // Otherwise: the answer for the client when no response byte has reached it yet
  // (502, 503, 410, ...) and why, in words for the client.
  int http_status = 502;
  std::string reason;
};

// What the proxy hears of its upstream. Called from any thread, one call at a time;
// the proxy never blocks in them.
class UpstreamSink {
 public:
  virtual ~UpstreamSink() = default;
  // Bytes arrived where none were waiting.
  virtual void OnReadable() = 0;
  // A Write that took less than offered has room now.
  virtual void OnRoom() = 0;
  // The upstream sends nothing more: what Read still gives is the rest.
  virtual void OnFinished() = 0;
  // The stream is over; no call follows.
  virtual void OnEnded(const UpstreamEnd& end) = 0;
};

// The upstream byte stream of one exchange. Thread-safe. Dropping it ends the stream
// both ways when it is still open.
class Upstream {
 public:
  virtual ~Upstream() = default;
  // Takes as many of `data`'s bytes as there is room for (0: OnRoom follows); an error
  // once the stream is over.
  virtual StatusOr<size_t> Write(std::string_view data) = 0;
  // Sends nothing more.
  virtual Status Finish() = 0;
  // Up to `max` received bytes; empty when none wait.
  virtual std::string Read(size_t max) = 0;
};

// A request as the authorizer sees it: `request` (no body: it is still unread) and its
// header fields without the hop-by-hop ones (Connection and the fields it names,
// Keep-Alive, Proxy-Connection, TE, Trailer, Upgrade, Expect) and without the framing
// (Content-Length, Transfer-Encoding), which the proxy sets itself.
struct ProxyRequest {
  Request request;
  HeaderFields fields;
};

// How one exchange went, for the access log and metering.
struct ProxyExchange {
  int status = 0;          // the response's status; 0 when none came
  uint64_t bytes_in = 0;   // request body bytes relayed upstream (and, upgraded, all bytes)
  uint64_t bytes_out = 0;  // response bytes relayed to the client, header included
  double seconds = 0;
  bool upgraded = false;  // a 101 made it a tunnel
  bool complete = false;  // both sides said where they end and got there
};

struct ProxyGrant {
  // Answer this instead; nothing is opened (the request's body, if any, is not read and
  // the connection closes after).
  std::optional<Response> response;
  // The request target and the header fields the upstream gets.
  std::string target;
  HeaderFields fields;
  // Opens the upstream; `sink` is kept weakly (the proxy keeps it alive). Called once, on
  // the connection's thread: it must not block.
  std::function<StatusOr<std::unique_ptr<Upstream>>(std::weak_ptr<UpstreamSink> sink)> open;
  // Called once when the exchange is over, however it ended. May be null.
  std::function<void(const ProxyExchange&)> done;
  // False: the proxy writes no request line or header upstream, only the body as the
  // client framed it (the upstream knows the request already: the agent's archive
  // exchange with the Docker Engine, which it writes itself).
  bool send_head = true;
  // May change the final answer's header fields (hop-by-hop ones already taken out)
  // before the client gets them, knowing its status. May be null.
  std::function<void(int status, HeaderFields& fields)> rewrite_response;
};

// Decides about one request (see the top of this file). Runs on a worker thread;
// exceptions are answered with a 500.
using ProxyAuthorizer = std::function<StatusOr<ProxyGrant>(const ProxyRequest& request)>;

// Whether a header field is hop-by-hop or framing (see ProxyRequest), by name in any case.
bool IsHopByHopField(std::string_view name);

}  // namespace gpunex::platform::http
