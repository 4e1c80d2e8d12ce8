// Download and upload endpoints of the HTTP server (see stream_transfer.h and stream.h).
#include "platform/http/internal/stream_transfer.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "common/json.h"
#include "common/log.h"
#include "common/status.h"

namespace gpunex::platform::http::internal {
namespace {

// A streamed body moves through buffers of this size.
constexpr size_t kStreamChunk = 1 << 20;

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

// Arms the stream's timer for the next read or write of a streamed body: read_timeout,
// cut to what is left before `deadline`. False when the deadline has passed.
bool ArmStreamTimer(const ServerOptions& options, beast::tcp_stream& tcp_stream,
                    std::chrono::steady_clock::time_point deadline) {
  const auto left = deadline - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return false;
  tcp_stream.expires_after(
      std::min<std::chrono::steady_clock::duration>(options.read_timeout, left));
  return true;
}

// Runs the route's authorizer on the worker pool.
asio::awaitable<std::pair<Status, StreamGrant>> RunAuthorizer(ServerState& state,
                                                              const StreamAuthorizer& authorize,
                                                              std::shared_ptr<Request> req) {
  using Result = std::pair<Status, StreamGrant>;
  // As in RunAcceptor. `authorize` lives in the options, as long as the server.
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
  auto on_pool = asio::co_spawn(state.pool, std::move(invoke), asio::use_awaitable);
  Result result = co_await std::move(on_pool);
  co_return result;
}

}  // namespace

const StreamRoute* FindStreamRoute(const ServerOptions& options, beast::string_view target) {
  if (options.stream_routes.empty()) return nullptr;
  std::string path;
  std::map<std::string, std::string> query;
  // A bad target is answered by the normal path.
  if (!ParseTarget(std::string_view(target.data(), target.size()), &path, &query).ok()) {
    return nullptr;
  }
  auto it = options.stream_routes.find(path);
  return it == options.stream_routes.end() ? nullptr : &it->second;
}

template <typename Stream>
asio::awaitable<bool> ServeStream(ServerState& state, Stream& stream, beast::flat_buffer& buffer,
                                  bhttp::request_parser<bhttp::string_body>& parser,
                                  const StreamRoute& route, const std::string& remote) {
  constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  const ServerOptions& options = state.options;
  const std::atomic<bool>& draining = state.draining;
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
    const bool keep = keep_alive && !close && !draining;
    auto res = ToBeast(std::move(resp), version, keep, false);
    if (!co_await WriteResponse(stream, res, options.read_timeout)) co_return false;
    if (!keep) co_await CloseConnection(stream, close);
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
  } else if (draining) {
    refusal = ErrorResponse(Unavailable("the server is shutting down"));
  } else if (!upload && has_body) {
    refusal = ErrorResponse(InvalidArgument("a download request has no body"));
  }
  StreamGrant grant;
  if (!refusal) {
    auto authorizing = RunAuthorizer(state, route.authorize, req);
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
    const bool close = has_body || draining;
    const bool keep = co_await answer(*refusal, close);
    co_return keep;
  }

  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + options.stream_timeout;
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
    keep_alive = keep_alive && !draining;
    res.keep_alive(keep_alive);
    res.body().data = nullptr;
    res.body().more = true;
    bhttp::response_serializer<bhttp::buffer_body> serializer{res};
    uint64_t sent = 0;
    bool ok = ArmStreamTimer(options, tcp_stream, deadline);
    if (ok) {
      auto [ec, n] = co_await bhttp::async_write_header(stream, serializer, kAwait);
      ok = !ec;
    }
    while (ok && sent < grant.bytes) {
      // A shutdown ends the transfer rather than waiting for it.
      if (draining || !ArmStreamTimer(options, tcp_stream, deadline)) {
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
    if (ok && ArmStreamTimer(options, tcp_stream, deadline)) {
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
    if (!keep_alive) co_await CloseConnection(stream, false);
    co_return keep_alive;
  }

  if (has_body && expects_continue) {
    bhttp::response<bhttp::empty_body> go_on{bhttp::status::continue_, 11};
    ArmStreamTimer(options, tcp_stream, deadline);
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
    if (draining || !ArmStreamTimer(options, tcp_stream, deadline)) {
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
    refusal = ec == bhttp::error::body_limit ? too_large(grant.bytes)
                                             : ReadErrorResponse(ec, options.max_body_bytes);
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

template asio::awaitable<bool> ServeStream<PlainStream>(ServerState&, PlainStream&,
                                                        beast::flat_buffer&,
                                                        bhttp::request_parser<bhttp::string_body>&,
                                                        const StreamRoute&, const std::string&);
template asio::awaitable<bool> ServeStream<TlsStream>(ServerState&, TlsStream&, beast::flat_buffer&,
                                                      bhttp::request_parser<bhttp::string_body>&,
                                                      const StreamRoute&, const std::string&);

}  // namespace gpunex::platform::http::internal
