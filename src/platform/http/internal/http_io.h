// HTTP/1.1 messages on a Beast stream, as the session (session.cc), the stream transfers
// (stream_transfer.cc) and the WebSocket upgrade (websocket_connection.cc) share them: the
// two stream types a connection may have (plain TCP, TLS), the conversions between Beast
// messages and the http::Request and http::Response values that application code sees,
// the answer to a request that could not be read, writing a response, and closing a
// connection politely.
//
// This is the header that brings in Beast; include it only from the implementation files
// of src/platform/http that speak HTTP (each such translation unit is slow to compile).
//
// Thread-safety: the functions hold no state; a stream is used on its connection's strand
// only, as Asio requires.
#pragma once

#include <algorithm>
#include <array>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "common/log.h"
#include "common/status.h"
#include "platform/http/http.h"
#include "platform/http/internal/server_state.h"

namespace gpunex::platform::http::internal {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

using PlainStream = beast::tcp_stream;
using TlsStream = asio::ssl::stream<beast::tcp_stream>;

// How long a closing connection may take to say goodbye: the TLS close_notify exchange,
// or reading (and discarding) the rest of a request that was refused.
inline constexpr std::chrono::seconds kCloseTimeout{2};
inline constexpr size_t kReadChunk = 8192;

inline bool IEquals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

// A header a handler may send: a token name and a value without CR, LF or NUL (which
// would let a value smuggle in headers of its own).
inline bool IsSafeHeader(std::string_view name, std::string_view value) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) ||
          std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos)) {
      return false;
    }
  }
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

// A body that is counted and dropped, never copied: an upload to a stream route, and the
// bodies the proxy relays (its parser only finds where they end).
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

// The Beast response for a handler's Response. The server owns framing: handler headers
// named Content-Length, Transfer-Encoding or Connection are dropped.
inline bhttp::response<bhttp::string_body> ToBeast(Response resp, unsigned version, bool keep_alive,
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
inline std::shared_ptr<Request> ToRequest(bhttp::request<bhttp::string_body>& msg,
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

// The answer to a failed read of a request, or nullopt when there is none to give
// (the peer left, the read timed out, the server closed the connection).
// `max_body_bytes` is the limit a body_limit error refers to.
inline std::optional<Response> ReadErrorResponse(const error_code& ec, size_t max_body_bytes) {
  if (ec == bhttp::error::body_limit) {
    return ErrorResponse(
        Status(StatusCode::kPayloadTooLarge, "the request body is too large",
               {{"body", "must be at most " + std::to_string(max_body_bytes) + " bytes"}}));
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

// Why a request's header leaves the end of its body unknown (RFC 9112 §6.1–6.3), or
// nullopt when its framing is sound. Transfer-Encoding is accepted only as one field of
// exactly "chunked" on HTTP/1.1 without Content-Length: another coding ("gzip", "xchunked",
// "chunked, identity"), both framings at once, or any Transfer-Encoding from an HTTP/1.0
// client could let a proxy and this server see different requests in the same bytes
// (request smuggling), so the request is refused and the connection closed.
template <typename Fields>
std::optional<std::string> FramingProblem(const bhttp::request<Fields>& h) {
  int te_fields = 0;
  std::string te;
  for (const auto& f : h) {
    if (f.name() == bhttp::field::transfer_encoding) {
      ++te_fields;
      te = std::string(f.value());
    }
  }
  if (te_fields == 0) return std::nullopt;
  if (h.version() < 11) return "Transfer-Encoding is not allowed in an HTTP/1.0 request";
  if (h.find(bhttp::field::content_length) != h.end())
    return "a request must not carry both Transfer-Encoding and Content-Length";
  const size_t a = te.find_first_not_of(" \t");
  const size_t b = te.find_last_not_of(" \t");
  const std::string_view coding =
      a == std::string::npos ? std::string_view() : std::string_view(te).substr(a, b - a + 1);
  if (te_fields > 1 || !IEquals(coding, "chunked"))
    return "the only Transfer-Encoding accepted is \"chunked\"";
  return std::nullopt;
}

// Writes `res`, which must complete within `timeout`. Returns whether it was written.
template <typename Stream>
asio::awaitable<bool> WriteResponse(Stream& stream, bhttp::response<bhttp::string_body>& res,
                                    std::chrono::seconds timeout) {
  beast::get_lowest_layer(stream).expires_after(timeout);
  auto [ec, n] = co_await bhttp::async_write(stream, res, kAwait);
  co_return !ec;
}

// Ends the connection from this side within kCloseTimeout: the TLS close_notify exchange,
// or a TCP half-close, followed, when `discard_input`, by reading and dropping what the
// client still sends.
template <typename Stream>
asio::awaitable<void> CloseConnection(Stream& stream, bool discard_input) {
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

}  // namespace gpunex::platform::http::internal
