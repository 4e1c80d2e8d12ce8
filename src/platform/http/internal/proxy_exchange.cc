// The proxy's exchanges (see proxy_exchange.h and proxy.h).
//
// One exchange is two coroutines on the connection's strand: this one, which runs the
// authorizer, writes the request's header upstream and then relays the response down
// to the client, and `Up`, which relays the request's body (and, after a 101, every byte
// the client sends) up. Beast's parsers only find where each body ends: the bytes they
// consume are relayed as they arrived, so no body is decoded, copied whole or re-framed.
#include "platform/http/internal/proxy_exchange.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "common/ascii.h"
#include "common/thread_annotations.h"
#include "platform/http/proxy.h"
#include "platform/http/router.h"

namespace gpunex::platform::http {

bool IsHopByHopField(std::string_view name) {
  for (std::string_view hop : {"connection", "keep-alive", "proxy-connection", "te", "trailer",
                               "upgrade", "expect", "content-length", "transfer-encoding"}) {
    if (internal::IEquals(name, hop)) return true;
  }
  return false;
}

namespace internal {
namespace {

// Bytes move through pieces of this size each way.
constexpr size_t kChunk = 64 * 1024;
// The longest response header taken from an upstream.
constexpr uint32_t kMaxResponseHeader = 64 * 1024;

// The names a Connection header lists (lower-case): hop-by-hop fields of their own.
std::set<std::string> ConnectionTokens(std::string_view value) {
  std::set<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    std::string_view token = value.substr(start, comma - start);
    const size_t a = token.find_first_not_of(" \t");
    const size_t b = token.find_last_not_of(" \t");
    if (a != std::string_view::npos) {
      out.insert(AsciiLower(token.substr(a, b - a + 1)));
    }
    start = comma + 1;
  }
  return out;
}

// The proxy's end of the upstream: what the sink heard, and the two timers the
// exchange's coroutines sleep on until something happens.
class Bridge final : public UpstreamSink, public std::enable_shared_from_this<Bridge> {
 public:
  explicit Bridge(const asio::any_io_executor& strand)
      : strand_(strand), up(strand), down(strand) {}

  void OnReadable() override { Wake(); }
  void OnRoom() override { Wake(); }
  void OnFinished() override EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      finished_ = true;
    }
    Wake();
  }
  void OnEnded(const UpstreamEnd& end) override EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      end_ = end;
    }
    Wake();
  }

  // Wakes both coroutines: the timers are cancelled on the strand, after the caller (when
  // on the strand) has gone to sleep, so that no wake is lost.
  void Wake() {
    asio::post(strand_, [self = shared_from_this()] {
      self->up.cancel();
      self->down.cancel();
    });
  }

  bool Finished() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return finished_ || (end_ && end_->clean);
  }
  std::optional<UpstreamEnd> Failed() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (end_ && !end_->clean) return end_;
    return std::nullopt;
  }

  // Sleeps on `timer` until a Wake or `timeout`; false when the timeout passed.
  static asio::awaitable<bool> Sleep(asio::steady_timer& timer, std::chrono::seconds timeout) {
    timer.expires_after(timeout);
    auto [ec] = co_await timer.async_wait(kAwait);
    co_return ec == asio::error::operation_aborted;
  }

 private:
  const asio::any_io_executor strand_;
  mutable Mutex mu_;
  bool finished_ GUARDED_BY(mu_) = false;
  std::optional<UpstreamEnd> end_ GUARDED_BY(mu_);

 public:
  // On the strand only: `up` for the way up, `down` for the way down.
  asio::steady_timer up;
  asio::steady_timer down;
};

// What the two coroutines of one exchange share (on the strand only).
struct Exchange {
  std::shared_ptr<Bridge> bridge;
  std::unique_ptr<Upstream> upstream;
  ProxyExchange figures;
  bool up_done = false;        // Up has returned
  bool up_failed = false;      // the request's body did not arrive whole
  bool request_done = false;   // its body has gone up whole
  bool tunnel = false;         // a 101 came: bytes both ways from here
  bool response_done = false;  // the way down is over (Up stops reading)
};

// Writes all of `data` upstream, sleeping on `timer` while it has no room. False when the
// upstream is over or made no room within `idle`.
asio::awaitable<bool> WriteUp(Exchange& x, std::string_view data, asio::steady_timer& timer,
                              std::chrono::seconds idle) {
  while (!data.empty()) {
    StatusOr<size_t> n = x.upstream->Write(data);
    if (!n.ok()) co_return false;
    data.remove_prefix(*n);
    if (*n > 0) continue;
    if (x.bridge->Failed()) co_return false;
    if (!co_await Bridge::Sleep(timer, idle)) co_return false;
  }
  co_return true;
}

// The way up: the request's body, as the parser finds it in what the client sends, then,
// once the way down has seen a 101, every byte until the client finishes.
template <typename Stream>
asio::awaitable<void> Up(Exchange& x, Stream& stream, beast::flat_buffer& buffer,
                         std::optional<bhttp::request_parser<DiscardBody>>& body,
                         std::chrono::seconds idle) {
  beast::tcp_stream& tcp = beast::get_lowest_layer(stream);
  if (body) {
    error_code ec;
    while (!body->is_done() && !x.response_done) {
      if (buffer.size() > 0) {
        const size_t used = body->put(buffer.data(), ec);
        if (ec == bhttp::error::need_more) {
          ec = {};
        } else if (ec) {
          break;
        }
        if (used > 0) {
          const std::string_view piece(static_cast<const char*>(buffer.data().data()), used);
          auto writing = WriteUp(x, piece, x.bridge->up, idle);
          const bool ok = co_await std::move(writing);
          buffer.consume(used);
          x.figures.bytes_in += used;
          if (!ok) {
            ec = asio::error::broken_pipe;
            break;
          }
          continue;
        }
      }
      tcp.expires_after(idle);
      auto [rec, n] = co_await stream.async_read_some(buffer.prepare(kChunk), kAwait);
      buffer.commit(n);
      if (rec) {
        ec = rec;
        break;
      }
    }
    x.request_done = body->is_done();
    x.up_failed = !x.request_done;
  } else {
    x.request_done = true;
  }
  // Nothing more goes up unless the answer is a 101.
  while (!x.tunnel && !x.response_done && !x.up_failed) {
    if (x.bridge->Failed()) break;
    co_await Bridge::Sleep(x.bridge->up, idle);
  }
  if (x.tunnel && !x.up_failed) {
    for (;;) {
      if (buffer.size() > 0) {
        const std::string_view piece(static_cast<const char*>(buffer.data().data()), buffer.size());
        auto writing = WriteUp(x, piece, x.bridge->up, idle);
        const bool ok = co_await std::move(writing);
        x.figures.bytes_in += buffer.size();
        buffer.consume(buffer.size());
        if (!ok) break;
      }
      tcp.expires_after(x.response_done ? std::chrono::seconds(kCloseTimeout) : idle);
      auto [rec, n] = co_await stream.async_read_some(buffer.prepare(kChunk), kAwait);
      buffer.commit(n);
      if (rec == asio::error::eof || (rec && n == 0)) {
        if (rec == asio::error::eof) (void)x.upstream->Finish();
        break;
      }
    }
    buffer.consume(buffer.size());
  }
}

// The response's header as the client gets it: the upstream's fields less the
// hop-by-hop ones (and as `rewrite` changes them, for a final answer), with the client
// connection's own.
std::string ClientHeader(const bhttp::response_parser<DiscardBody>& rp, bool keep_alive,
                         const std::string& upgrade,
                         const std::function<void(int, HeaderFields&)>* rewrite = nullptr) {
  const auto& res = rp.get();
  const std::set<std::string> named = ConnectionTokens(res[bhttp::field::connection]);
  HeaderFields fields;
  for (const auto& f : res) {
    const std::string_view name(f.name_string().data(), f.name_string().size());
    const std::string lower = AsciiLower(name);
    // The body is relayed as framed, so its framing fields stay.
    const bool framing =
        lower == "content-length" || lower == "transfer-encoding" || lower == "trailer";
    if ((!framing && IsHopByHopField(lower)) || named.count(lower) > 0) continue;
    fields.emplace_back(std::string(name), std::string(f.value()));
  }
  if (rewrite != nullptr && *rewrite) (*rewrite)(res.result_int(), fields);
  std::string out =
      "HTTP/1.1 " + std::to_string(res.result_int()) + " " + std::string(res.reason()) + "\r\n";
  for (const auto& [name, value] : fields) {
    if (!IsSafeHeader(name, value)) continue;
    out.append(name).append(": ").append(value).append("\r\n");
  }
  if (!upgrade.empty()) {
    out += "Connection: Upgrade\r\nUpgrade: " + upgrade + "\r\n";
  } else if (!keep_alive) {
    out += "Connection: close\r\n";
  }
  out += "\r\n";
  return out;
}

// Runs the authorizer on the worker pool.
asio::awaitable<std::pair<Status, ProxyGrant>> Authorize(ServerState& state,
                                                         const ProxyAuthorizer& authorize,
                                                         std::shared_ptr<ProxyRequest> req) {
  using Result = std::pair<Status, ProxyGrant>;
  // As in RunHandler: the pool's coroutine owns the request; `authorize` lives in the
  // options, as long as the server.
  auto invoke = [&authorize, req]() -> asio::awaitable<Result> {
    auto call = [&]() -> Result {
      StatusOr<ProxyGrant> grant = authorize(*req);
      if (!grant.ok()) return Result(grant.status(), ProxyGrant());
      return Result(Status::Ok(), std::move(*grant));
    };
    auto failed = [] { return Result(Internal("an internal error occurred"), ProxyGrant()); };
    co_return Guarded(req->request, call, failed);
  };
  auto on_pool = asio::co_spawn(state.pool, std::move(invoke), asio::use_awaitable);
  Result result = co_await std::move(on_pool);
  co_return result;
}

}  // namespace

const ProxyAuthorizer* FindProxyRoute(const ServerOptions& options, beast::string_view target,
                                      std::map<std::string, std::string>* params) {
  if (options.proxy_routes.empty()) return nullptr;
  std::string path;
  std::map<std::string, std::string> query;
  if (!ParseTarget(std::string_view(target.data(), target.size()), &path, &query).ok()) {
    return nullptr;
  }
  for (const auto& [pattern, authorize] : options.proxy_routes) {
    params->clear();
    if (MatchPattern(pattern, path, params)) return &authorize;
  }
  return nullptr;
}

template <typename Stream>
asio::awaitable<bool> ServeProxy(ServerState& state, Stream& stream, beast::flat_buffer& buffer,
                                 bhttp::request_parser<bhttp::string_body>& parser,
                                 const std::string& remote, const ProxyAuthorizer& authorize,
                                 std::map<std::string, std::string> params) {
  constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  const ServerOptions& options = state.options;
  const std::chrono::seconds idle = options.idle_timeout;
  beast::tcp_stream& tcp = beast::get_lowest_layer(stream);
  auto& head = parser.get();
  const unsigned version = head.version();
  const bool has_body = !parser.is_done();
  const bool expects_continue =
      version >= 11 && IEquals(head[bhttp::field::expect], "100-continue");
  const bool is_head = head.method() == bhttp::verb::head;
  const std::set<std::string> named = ConnectionTokens(head[bhttp::field::connection]);
  const std::string upgrade = version >= 11 && named.count("upgrade") > 0
                                  ? std::string(head[bhttp::field::upgrade])
                                  : std::string();
  const bool keep_alive = head.keep_alive();
  const bool chunked = parser.chunked();
  const boost::optional<uint64_t> length = parser.content_length();

  auto preq = std::make_shared<ProxyRequest>();
  for (const auto& f : head) {
    std::string name(f.name_string());
    const std::string lower = AsciiLower(name);
    if (IsHopByHopField(lower) || named.count(lower) > 0) continue;
    preq->fields.emplace_back(std::move(name), std::string(f.value()));
  }
  Status target_status;
  preq->request = std::move(*ToRequest(head, remote, kTls, &target_status));
  preq->request.params = std::move(params);

  // Answers `resp` itself; `close` closes the connection after (a body left unread).
  auto answer = [&](Response& resp, bool close) -> asio::awaitable<bool> {
    const bool keep = keep_alive && !close && !state.draining;
    auto res = ToBeast(std::move(resp), version, keep, is_head);
    if (!co_await WriteResponse(stream, res, options.read_timeout)) co_return false;
    if (!keep) co_await CloseConnection(stream, close);
    co_return keep;
  };
  std::optional<Response> refusal;
  if (!target_status.ok()) {
    refusal = ErrorResponse(target_status);
  } else if (head.method() == bhttp::verb::connect) {
    refusal = ProtocolErrorResponse(405, "method_not_allowed", "CONNECT is not proxied here");
  } else if (state.draining) {
    refusal = ErrorResponse(Unavailable("the server is shutting down"));
  }
  ProxyGrant grant;
  if (!refusal) {
    auto authorizing = Authorize(state, authorize, preq);
    auto [status, granted] = co_await std::move(authorizing);
    if (!status.ok()) {
      refusal = ErrorResponse(status);
    } else if (granted.response) {
      refusal = std::move(granted.response);
    } else {
      grant = std::move(granted);
    }
  }
  Exchange x;
  if (!refusal) {
    x.bridge = std::make_shared<Bridge>(stream.get_executor());
    StatusOr<std::unique_ptr<Upstream>> opened =
        grant.open ? grant.open(std::weak_ptr<UpstreamSink>(x.bridge))
                   : StatusOr<std::unique_ptr<Upstream>>(Internal("no upstream"));
    if (!opened.ok()) {
      refusal = ErrorResponse(opened.status());
    } else {
      x.upstream = std::move(*opened);
    }
  }
  if (refusal) {
    const bool keep = co_await answer(*refusal, has_body);
    co_return keep;
  }

  const auto started = std::chrono::steady_clock::now();
  auto finish = [&] {
    x.figures.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (grant.done) grant.done(x.figures);
  };

  // The request's header goes up first (unless the upstream writes its own).
  std::string up_head = preq->request.method + " " + grant.target +
                        (version >= 11 ? " HTTP/1.1\r\n" : " HTTP/1.0\r\n");
  for (const auto& [name, value] : grant.fields) {
    if (IsSafeHeader(name, value) && !IsHopByHopField(name)) {
      up_head.append(name).append(": ").append(value).append("\r\n");
    }
  }
  if (chunked) {
    up_head += "Transfer-Encoding: chunked\r\n";
  } else if (length) {
    up_head += "Content-Length: " + std::to_string(*length) + "\r\n";
  }
  up_head += upgrade.empty() ? "Connection: close\r\n"
                             : "Connection: Upgrade\r\nUpgrade: " + upgrade + "\r\n";
  up_head += "\r\n";
  if (!grant.send_head) up_head.clear();
  {
    auto writing = WriteUp(x, up_head, x.bridge->down, idle);
    if (!co_await std::move(writing)) {
      x.upstream.reset();
      finish();
      Response unavailable = ProtocolErrorResponse(502, "bad_gateway", "the upstream went away");
      const bool keep = co_await answer(unavailable, has_body);
      co_return keep;
    }
  }
  if (has_body && expects_continue) {
    bhttp::response<bhttp::empty_body> go_on{bhttp::status::continue_, 11};
    tcp.expires_after(options.read_timeout);
    auto [cec, cn] = co_await bhttp::async_write(stream, go_on, kAwait);
    if (cec) {
      finish();
      co_return false;
    }
  }

  // The way up runs beside the way down from here.
  std::optional<bhttp::request_parser<DiscardBody>> body;
  if (has_body) {
    body.emplace(std::move(parser));
    body->body_limit(boost::none);
    body->eager(true);
  }
  auto up = Up(x, stream, buffer, body, idle);
  asio::co_spawn(stream.get_executor(), std::move(up),
                 [&x, bridge = x.bridge](std::exception_ptr e) {
                   LogIfFailed(e, "proxy.up");
                   x.up_done = true;
                   bridge->Wake();
                 });

  // The way down.
  std::optional<bhttp::response_parser<DiscardBody>> rp;
  auto fresh_parser = [&] {
    rp.emplace();
    rp->header_limit(kMaxResponseHeader);
    rp->body_limit(boost::none);
    if (is_head) rp->skip(true);
  };
  fresh_parser();
  std::string pending;            // bytes from upstream that are not parsed yet
  bool client_keep = false;       // the client's connection carries another request
  bool complete = false;          // the response arrived whole
  std::optional<Response> early;  // the answer when the upstream failed before one came
  bool sent = false;              // a byte of the answer has gone to the client
  auto write_down = [&](const std::string& data) -> asio::awaitable<bool> {
    tcp.expires_after(idle);
    auto [ec, n] = co_await asio::async_write(stream, asio::buffer(data), kAwait);
    if (ec) co_return false;
    sent = true;
    x.figures.bytes_out += n;
    co_return true;
  };
  // Appends what the upstream sends next to `pending`.
  enum class More { kBytes, kEnd, kFailed };
  auto more = [&]() -> asio::awaitable<More> {
    for (;;) {
      std::string got = x.upstream->Read(kChunk);
      if (!got.empty()) {
        pending += got;
        co_return More::kBytes;
      }
      if (std::optional<UpstreamEnd> failed = x.bridge->Failed()) {
        if (!sent) {
          early = ProtocolErrorResponse(failed->http_status,
                                        failed->http_status == 410 ? "gone" : "bad_gateway",
                                        failed->reason);
        }
        co_return More::kFailed;
      }
      if (x.bridge->Finished()) co_return More::kEnd;
      if (x.up_failed && !x.tunnel) co_return More::kFailed;  // the client left mid-request
      if (!co_await Bridge::Sleep(x.bridge->down, idle)) co_return More::kFailed;
    }
  };
  bool header_sent = false;  // the final answer's header has gone to the client
  bool need_more = true;
  for (;;) {
    if (need_more || pending.empty()) {
      auto reading = more();
      const More got = co_await std::move(reading);
      if (got == More::kFailed) break;
      if (got == More::kEnd) {
        if (x.tunnel) {
          complete = true;
        } else if (!rp->is_header_done()) {
          if (!sent) {
            early = ProtocolErrorResponse(502, "bad_gateway",
                                          "the port closed the connection without an answer");
          }
        } else {
          // A body without a length ends with the connection.
          error_code ec;
          rp->put_eof(ec);
          complete = !ec && pending.empty();
        }
        break;
      }
      need_more = false;
    }
    if (x.tunnel) {
      const std::string piece = std::move(pending);
      pending.clear();
      auto writing = write_down(piece);
      if (!co_await std::move(writing)) break;
      continue;
    }
    error_code ec;
    const size_t n = rp->put(asio::buffer(pending), ec);
    if (ec == bhttp::error::need_more) {
      ec = {};
      need_more = n == 0;
    }
    if (ec || (!rp->is_header_done() && pending.size() > kMaxResponseHeader)) {
      if (!rp->is_header_done() && !sent) {
        early =
            ProtocolErrorResponse(502, "bad_gateway", "the port's answer is not valid HTTP/1.1");
      }
      break;  // (a body that breaks its own framing: the client's connection closes)
    }
    if (!rp->is_header_done()) {
      pending.erase(0, n);
      need_more = true;
      continue;
    }
    if (!header_sent) {
      pending.erase(0, n);
      const int status = rp->get().result_int();
      x.figures.status = status;
      if (status == 101) {
        if (upgrade.empty()) {
          early = ProtocolErrorResponse(502, "bad_gateway", "the port switched protocols unasked");
          break;
        }
        const std::string h =
            ClientHeader(*rp, false, std::string(rp->get()[bhttp::field::upgrade]));
        auto writing = write_down(h);
        if (!co_await std::move(writing)) break;
        x.tunnel = true;
        x.figures.upgraded = true;
        x.bridge->Wake();
        continue;
      }
      if (status >= 100 && status < 200) {
        // An interim answer (103 Early Hints): passed on; the real one follows.
        const std::string h = ClientHeader(*rp, true, "");
        auto writing = write_down(h);
        if (!co_await std::move(writing)) break;
        fresh_parser();
        continue;
      }
      const bool framed = is_head || status == 204 || status == 304 ||
                          static_cast<bool>(rp->content_length()) || rp->chunked();
      client_keep = keep_alive && framed && !state.draining;
      const std::string h = ClientHeader(*rp, client_keep, "", &grant.rewrite_response);
      auto writing = write_down(h);
      if (!co_await std::move(writing)) break;
      header_sent = true;
      rp->eager(true);
      if (rp->is_done()) {
        complete = true;
        break;
      }
      continue;
    }
    if (n > 0) {
      const std::string piece = pending.substr(0, n);
      pending.erase(0, n);
      auto writing = write_down(piece);
      if (!co_await std::move(writing)) break;
    }
    if (rp->is_done()) {
      complete = true;
      break;
    }
  }

  // The exchange is over on the way down: the way up stops too.
  x.response_done = true;
  const bool request_whole = x.request_done && !x.up_failed;
  const bool keep = client_keep && complete && request_whole && !x.tunnel && !early;
  if (early) {
    // Nothing of an answer reached the client: it hears why.
    Response why = std::move(*early);
    tcp.expires_after(options.read_timeout);
    auto res = ToBeast(std::move(why), version, false, is_head);
    [[maybe_unused]] auto [wec, wn] = co_await bhttp::async_write(stream, res, kAwait);
  }
  if (!keep) {
    // Up may be reading the client (a body the answer did not wait for, or a tunnel):
    // a half-close tells the client, and what it still sends is read for a moment.
    if constexpr (!kTls) {
      error_code ignored;
      tcp.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
    tcp.expires_after(kCloseTimeout);
  }
  x.bridge->Wake();
  while (!x.up_done) {
    co_await Bridge::Sleep(x.bridge->down, idle);
  }
  x.upstream.reset();
  x.figures.complete = complete && request_whole;
  finish();
  if (!keep) {
    error_code ignored;
    tcp.socket().close(ignored);
    co_return false;
  }
  if (buffer.size() == 0) buffer.shrink_to_fit();
  co_return true;
}

template asio::awaitable<bool> ServeProxy<PlainStream>(ServerState&, PlainStream&,
                                                       beast::flat_buffer&,
                                                       bhttp::request_parser<bhttp::string_body>&,
                                                       const std::string&, const ProxyAuthorizer&,
                                                       std::map<std::string, std::string>);
template asio::awaitable<bool> ServeProxy<TlsStream>(ServerState&, TlsStream&, beast::flat_buffer&,
                                                     bhttp::request_parser<bhttp::string_body>&,
                                                     const std::string&, const ProxyAuthorizer&,
                                                     std::map<std::string, std::string>);

}  // namespace internal
}  // namespace gpunex::platform::http
