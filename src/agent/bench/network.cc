#include "agent/bench/network.h"

#include <curl/curl.h>
#include <poll.h>
#include <time.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "common/json.h"
#include "common/net/endpoint.h"

namespace gpunex::agent::bench {
namespace {

constexpr int64_t kMaxBytes = 1LL << 30;
constexpr double kMaxSeconds = 600;
constexpr long kConnectTimeoutS = 15;
// Beyond max_seconds, how long a transfer may take to wind down before it is cut.
constexpr double kGraceSeconds = 30;
constexpr size_t kPatternBytes = 1 << 20;
constexpr size_t kMaxErrorBody = 4096;
// libcurl's largest receive buffer (CURL_MAX_READ_SIZE).
constexpr long kReceiveBuffer = 512 * 1024;

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct CurlDeleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

// One request's settings: the URL, the token, TLS and the proxy as the agent's channel
// uses them.
struct Target {
  std::string base;  // http(s)://host[:port][/prefix], without a trailing '/'
  std::optional<net::HttpProxy> proxy;
};

StatusOr<Target> ResolveTarget(const NetworkOptions& o) {
  FieldErrors errors;
  if (o.token.empty() || o.token.size() > 256 ||
      o.token.find_first_of(std::string_view("\r\n\0 ", 4)) != std::string::npos) {
    errors["token"] = "must be an agent token";
  }
  if (o.bytes < 1 || o.bytes > kMaxBytes) errors["bytes"] = "must be from 1 byte to 1 GiB";
  if (!(o.max_seconds > 0 && o.max_seconds <= kMaxSeconds)) {
    errors["max_seconds"] = "must be more than 0 and at most 600";
  }
  std::string base = o.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.starts_with("wss://")) base = "https://" + base.substr(6);
  if (base.starts_with("ws://")) base = "http://" + base.substr(5);
  if (!base.starts_with("http://") && !base.starts_with("https://")) {
    errors["base_url"] = "must be an http:// or https:// URL";
  } else if (base.find_first_of("?#") != std::string::npos) {
    errors["base_url"] = "must not have a query or fragment";
  }
  if (!errors.empty())
    return Status(StatusCode::kInvalidArgument, "bad network benchmark options", errors);
  auto endpoint = net::ParseWebSocketUrl(base);
  if (!endpoint.ok()) return InvalidArgument("base_url: " + endpoint.status().message());
  GPUNEX_ASSIGN_OR_RETURN(std::optional<net::HttpProxy> proxy,
                          net::ChooseProxy(*endpoint, o.proxy));
  return Target{base, std::move(proxy)};
}

// The response status, once known, and the body of a refusal.
struct Reply {
  long status = 0;
  std::string body;  // at most kMaxErrorBody bytes, or the upload's JSON answer
};

Status StatusForReply(const Reply& r, const std::string& what) {
  std::string message = what + ": the platform answered " + std::to_string(r.status);
  if (auto v = ParseJson(r.body); v.ok() && v->is_object()) {
    const json::object& o = v->as_object();
    if (auto e = o.find("error"); e != o.end() && e->value().is_object()) {
      if (auto m = e->value().as_object().find("message");
          m != e->value().as_object().end() && m->value().is_string()) {
        message += ": " + std::string(m->value().as_string());
      }
    }
  }
  switch (r.status) {
    case 401:
      return Unauthenticated(message);
    case 403:
      return PermissionDenied(message);
    case 429:
      return ResourceExhausted(message);
    default:
      break;
  }
  if (r.status >= 400 && r.status < 500) return FailedPrecondition(message);
  return Unavailable(message);
}

// A handle with what both directions share. `url` and `errbuf` must outlive it.
StatusOr<CurlHandle> NewHandle(const NetworkOptions& o, const Target& t, const std::string& url,
                               char* errbuf) {
  static std::once_flag once;
  // curl_global_init is not thread-safe on every libcurl; do it once, before any handle.
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  CurlHandle h(curl_easy_init());
  if (!h) return Internal("curl_easy_init failed");
  CURL* c = h.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, kConnectTimeoutS);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                   static_cast<long>((o.max_seconds + kGraceSeconds) * 1000));
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_BUFFERSIZE, kReceiveBuffer);
  if (!o.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, o.ca_file.c_str());
  // The proxy is chosen as the channel chooses it; "" keeps libcurl from looking at the
  // environment by itself.
  if (t.proxy) {
    const std::string proxy =
        "http://" +
        (t.proxy->host.find(':') != std::string::npos ? "[" + t.proxy->host + "]" : t.proxy->host) +
        ":" + std::to_string(t.proxy->port);
    curl_easy_setopt(c, CURLOPT_PROXY, proxy.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPPROXYTUNNEL, 1L);
  } else {
    curl_easy_setopt(c, CURLOPT_PROXY, "");
  }
  return h;
}

// The proxy's own headers (Proxy-Authorization), sent only on the CONNECT request.
Slist ProxyHeaders(CURL* c, const Target& t) {
  Slist list;
  if (t.proxy && !t.proxy->authorization.empty()) {
    list.reset(
        curl_slist_append(nullptr, ("Proxy-Authorization: " + t.proxy->authorization).c_str()));
    curl_easy_setopt(c, CURLOPT_HEADEROPT, static_cast<long>(CURLHEADER_SEPARATE));
    curl_easy_setopt(c, CURLOPT_PROXYHEADER, list.get());
  }
  return list;
}

Slist Headers(const NetworkOptions& o, std::initializer_list<const char*> extra) {
  curl_slist* l = curl_slist_append(nullptr, ("Authorization: Bearer " + o.token).c_str());
  for (const char* h : extra) l = curl_slist_append(l, h);
  return Slist(l);
}

Status CurlFailure(CURLcode rc, const char* errbuf, const std::string& what) {
  const std::string detail = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
  return Unavailable(what + ": " + detail);
}

double Mbits(int64_t bytes, int64_t ns) {
  return static_cast<double>(bytes) * 8 / (static_cast<double>(ns) / 1e9) / 1e6;
}

struct Download {
  CURL* curl = nullptr;
  int64_t limit_ns = 0;
  Reply reply;
  int64_t total = 0;  // body bytes received
  int64_t first_ns = 0, first_bytes = 0, last_ns = 0;
  bool stopped = false;  // max_seconds ran out
};

size_t OnDownload(char* p, size_t size, size_t n, void* user) {
  auto* d = static_cast<Download*>(user);
  const size_t len = size * n;
  if (d->reply.status == 0) curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &d->reply.status);
  if (d->reply.status != 200) {
    d->reply.body.append(
        p, std::min(len, kMaxErrorBody - std::min(kMaxErrorBody, d->reply.body.size())));
    return len;
  }
  const int64_t now = NowNs();
  if (d->total == 0) {
    d->first_ns = now;
    d->first_bytes = static_cast<int64_t>(len);
  }
  d->last_ns = now;
  d->total += static_cast<int64_t>(len);
  if (now - d->first_ns >= d->limit_ns) {
    d->stopped = true;
    return 0;  // anything but `len` ends the transfer
  }
  return len;
}

StatusOr<std::pair<double, int64_t>> RunDownload(const NetworkOptions& o, const Target& t) {
  const std::string url = t.base + "/api/v1/agent/bench/download?bytes=" + std::to_string(o.bytes);
  char errbuf[CURL_ERROR_SIZE] = {0};
  Slist headers = Headers(o, {});
  GPUNEX_ASSIGN_OR_RETURN(CurlHandle h, NewHandle(o, t, url, errbuf));
  Slist proxy_headers = ProxyHeaders(h.get(), t);
  Download d;
  d.curl = h.get();
  d.limit_ns = static_cast<int64_t>(o.max_seconds * 1e9);
  curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h.get(), CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, OnDownload);
  curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, &d);
  const CURLcode rc = curl_easy_perform(h.get());
  curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &d.reply.status);
  if (d.reply.status != 0 && d.reply.status != 200) return StatusForReply(d.reply, "download");
  if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && d.stopped)) {
    return CurlFailure(rc, errbuf, "download (" + std::to_string(d.total) + " bytes received)");
  }
  if (!d.stopped && d.total != o.bytes) {
    return Unavailable("download: " + std::to_string(d.total) + " of " + std::to_string(o.bytes) +
                       " bytes arrived");
  }
  // The first piece only starts the clock: its bytes came before it.
  if (d.last_ns > d.first_ns && d.total > d.first_bytes) {
    return std::make_pair(Mbits(d.total - d.first_bytes, d.last_ns - d.first_ns), d.total);
  }
  // Everything came in one piece: the best that can be said is the whole request.
  double total_s = 0;
  curl_easy_getinfo(h.get(), CURLINFO_TOTAL_TIME, &total_s);
  return std::make_pair(Mbits(d.total, static_cast<int64_t>(std::max(total_s, 1e-6) * 1e9)),
                        d.total);
}

// The upload is written by hand onto the connection libcurl opens with
// CURLOPT_CONNECT_ONLY (so through the same proxy tunnel and TLS as any request):
// libcurl's own upload copies every byte into its buffer through a read callback first,
// which over a fast link costs a tenth of the throughput. The body is sent straight from
// one chunk built once; the answer is parsed by Beast's HTTP parser.

// What the upload sends, over and over: one chunk of the chunked body, built once, whose
// data are kPatternBytes of incompressible bytes (xorshift64*) framed as "100000\r\n"
// ... "\r\n".
constexpr size_t kChunkHeadBytes = 8;  // "100000\r\n"
const std::string& FramedChunk() {
  static const std::string chunk = [] {
    std::string c = "100000\r\n";
    static_assert(kPatternBytes == 0x100000);
    uint64_t x = 0x2545F4914F6CDD1DULL;
    for (size_t i = 0; i < kPatternBytes; i += 8) {
      x ^= x >> 12;
      x ^= x << 25;
      x ^= x >> 27;
      const uint64_t v = x * 0x2545F4914F6CDD1DULL;
      c.append(reinterpret_cast<const char*>(&v), 8);
    }
    c += "\r\n";
    return c;
  }();
  return chunk;
}
const char* Pattern() { return FramedChunk().data() + kChunkHeadBytes; }

// How long to wait for "100 Continue" before sending the body anyway (RFC 9110 §10.1.1:
// a proxy or server may not answer it).
constexpr int64_t kContinueWaitNs = 1'000'000'000;
constexpr size_t kMaxReplyHead = 16 * 1024;

// An HTTP/1.1 exchange on a CONNECT_ONLY handle: sends bytes and reads responses, each
// wait bounded by `deadline_ns`.
class Exchange {
 public:
  Exchange(CURL* c, curl_socket_t fd, int64_t deadline_ns)
      : c_(c), fd_(fd), deadline_ns_(deadline_ns) {}

  // Sends all of [p, p + n). Stops early, returning Ok with *answered set, when the
  // server answers before it has everything (a refusal of the body; a late
  // "100 Continue" is dropped).
  Status Send(const char* p, size_t n, bool* answered) {
    while (n > 0) {
      size_t sent = 0;
      const CURLcode rc = curl_easy_send(c_, p, n, &sent);
      if (rc == CURLE_OK) {
        p += sent;
        n -= sent;
        continue;
      }
      if (rc != CURLE_AGAIN) {
        // A server that refused the body may have closed the connection after its answer.
        auto got = ReadSome();
        if (got.ok() && *got && HasFinalAnswer()) {
          *answered = true;
          return Status::Ok();
        }
        return Unavailable(std::string("send failed: ") + curl_easy_strerror(rc));
      }
      GPUNEX_ASSIGN_OR_RETURN(short ready, Wait(POLLOUT | POLLIN, deadline_ns_));
      if (ready & POLLIN) {
        // Something to read mid-body: an early answer, or TLS records that carry none
        // (session tickets), which reading consumes.
        GPUNEX_ASSIGN_OR_RETURN(bool got, ReadSome());
        if (got && HasFinalAnswer()) {
          *answered = true;
          return Status::Ok();
        }
        if (eof_) return Unavailable("the platform closed the connection");
      }
    }
    return Status::Ok();
  }

  // Reads one response. `wait_until_ns` below the deadline bounds the wait for its first
  // byte: none by then gives std::nullopt (only used for "100 Continue").
  StatusOr<std::optional<Reply>> Read(int64_t wait_until_ns) {
    namespace bhttp = boost::beast::http;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.header_limit(kMaxReplyHead);
    parser.body_limit(kMaxErrorBody);
    parser.eager(true);
    for (;;) {
      if (!in_.empty()) {
        boost::beast::error_code ec;
        const size_t used = parser.put(boost::asio::buffer(in_), ec);
        in_.erase(0, used);
        if (ec && ec != bhttp::error::need_more) {
          return Unavailable("the platform's answer is malformed: " + ec.message());
        }
        if (parser.is_done()) {
          Reply r;
          r.status = static_cast<long>(parser.get().result_int());
          r.body = std::move(parser.get().body());
          return std::optional<Reply>(std::move(r));
        }
        if (!ec && used > 0) continue;
      }
      if (eof_) {
        boost::beast::error_code ec;
        if (parser.got_some()) parser.put_eof(ec);
        if (!parser.got_some() || ec) return Unavailable("the platform closed the connection");
        continue;
      }
      const bool first = in_.empty() && !parser.got_some();
      const int64_t until = first ? std::min(wait_until_ns, deadline_ns_) : deadline_ns_;
      GPUNEX_ASSIGN_OR_RETURN(bool got, ReadSome());
      if (got || eof_) continue;
      auto ready = Wait(POLLIN, until);
      if (!ready.ok()) {
        if (first && until < deadline_ns_ && NowNs() >= until) return std::optional<Reply>();
        return ready.status();
      }
    }
  }

 private:
  // Whether what was received starts with the head of a final (not 1xx) response;
  // complete 1xx responses at its front are dropped.
  bool HasFinalAnswer() {
    namespace bhttp = boost::beast::http;
    for (;;) {
      bhttp::response_parser<bhttp::empty_body> head;
      head.header_limit(kMaxReplyHead);
      boost::beast::error_code ec;
      const size_t used = head.put(boost::asio::buffer(in_), ec);
      if (!head.is_header_done()) return ec && ec != bhttp::error::need_more;  // malformed: final
      if (head.get().result_int() / 100 != 1) return true;
      in_.erase(0, used);
    }
  }

  // Reads what is there without waiting: true when bytes arrived.
  StatusOr<bool> ReadSome() {
    char buf[16384];
    size_t got = 0;
    const CURLcode rc = curl_easy_recv(c_, buf, sizeof buf, &got);
    if (rc == CURLE_AGAIN) return false;
    if (rc != CURLE_OK)
      return Unavailable(std::string("receive failed: ") + curl_easy_strerror(rc));
    if (got == 0) {
      eof_ = true;
      return false;
    }
    if (in_.size() + got > kMaxReplyHead + kMaxErrorBody)
      return Unavailable("the platform's answer is too long");
    in_.append(buf, got);
    return true;
  }

  // Waits for `events` on the socket until `until_ns`; the events that happened.
  StatusOr<short> Wait(short events, int64_t until_ns) {
    for (;;) {
      const int64_t left_ns = until_ns - NowNs();
      if (left_ns <= 0) return Unavailable("timed out");
      pollfd pfd{fd_, events, 0};
      const int n =
          poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left_ns / 1'000'000 + 1, 60'000)));
      if (n < 0 && errno != EINTR)
        return Unavailable(std::string("poll failed: ") + std::strerror(errno));
      if (n > 0) {
        if (pfd.revents & POLLNVAL) return Unavailable("the connection failed");
        // POLLHUP, POLLERR: what is left to read says why.
        if (pfd.revents & (POLLHUP | POLLERR)) return static_cast<short>(POLLIN);
        return static_cast<short>(pfd.revents);
      }
    }
  }

  CURL* c_;
  curl_socket_t fd_;
  int64_t deadline_ns_;
  std::string in_;  // received, not yet parsed
  bool eof_ = false;
};

StatusOr<std::pair<double, int64_t>> RunUpload(const NetworkOptions& o, const Target& t) {
  const std::string url = t.base + "/api/v1/agent/bench/upload";
  GPUNEX_ASSIGN_OR_RETURN(net::WebSocketEndpoint endpoint, net::ParseWebSocketUrl(url));
  char errbuf[CURL_ERROR_SIZE] = {0};
  GPUNEX_ASSIGN_OR_RETURN(CurlHandle h, NewHandle(o, t, url, errbuf));
  Slist proxy_headers = ProxyHeaders(h.get(), t);
  curl_easy_setopt(h.get(), CURLOPT_CONNECT_ONLY, 1L);
  const int64_t begun = NowNs();
  const int64_t limit_ns = static_cast<int64_t>(o.max_seconds * 1e9);
  const int64_t deadline = begun + static_cast<int64_t>((o.max_seconds + kGraceSeconds) * 1e9);
  if (const CURLcode rc = curl_easy_perform(h.get()); rc != CURLE_OK)
    return CurlFailure(rc, errbuf, "upload");
  curl_socket_t fd = CURL_SOCKET_BAD;
  if (curl_easy_getinfo(h.get(), CURLINFO_ACTIVESOCKET, &fd) != CURLE_OK || fd == CURL_SOCKET_BAD)
    return Internal("upload: libcurl gave no connection");
  Exchange x(h.get(), fd, deadline);
  auto failed = [](const Status& st) { return Unavailable("upload: " + st.message()); };

  const std::string head = "POST " + endpoint.target +
                           " HTTP/1.1\r\nHost: " + endpoint.HostHeader() +
                           "\r\nAuthorization: Bearer " + o.token +
                           "\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: "
                           "chunked\r\nExpect: 100-continue\r\n\r\n";
  bool answered = false;
  if (Status st = x.Send(head.data(), head.size(), &answered); !st.ok()) return failed(st);
  // The platform refuses (a revoked token, too many transfers) before the body is sent.
  std::optional<Reply> reply;
  {
    auto interim = x.Read(NowNs() + kContinueWaitNs);
    if (!interim.ok()) return failed(interim.status());
    if (*interim && (*interim)->status / 100 != 1) reply = std::move(**interim);
  }

  int64_t sent = 0;
  int64_t first_ns = 0;
  if (!reply) {
    first_ns = NowNs();
    const std::string& chunk = FramedChunk();
    while (!answered && sent < o.bytes && NowNs() - first_ns < limit_ns) {
      const int64_t left = o.bytes - sent;
      Status st;
      if (left >= static_cast<int64_t>(kPatternBytes)) {
        st = x.Send(chunk.data(), chunk.size(), &answered);
        if (st.ok() && !answered) sent += static_cast<int64_t>(kPatternBytes);
      } else {
        char size[32];
        const int len = std::snprintf(size, sizeof size, "%llx\r\n", static_cast<long long>(left));
        st = x.Send(size, static_cast<size_t>(len), &answered);
        if (st.ok() && !answered) st = x.Send(Pattern(), static_cast<size_t>(left), &answered);
        if (st.ok() && !answered) st = x.Send("\r\n", 2, &answered);
        if (st.ok() && !answered) sent += left;
      }
      if (!st.ok()) return failed(st);
    }
    if (!answered) {
      if (Status st = x.Send("0\r\n\r\n", 5, &answered); !st.ok()) return failed(st);
    }
    do {  // past a late "100 Continue"
      auto final_reply = x.Read(deadline);
      if (!final_reply.ok()) return failed(final_reply.status());
      reply = std::move(**final_reply);
    } while (reply->status / 100 == 1);
  }
  const int64_t end = NowNs();
  if (reply->status != 200) return StatusForReply(*reply, "upload");
  if (answered) return Unavailable("upload: the platform answered before the body was complete");
  // The platform says how much arrived; it must be all that was sent.
  auto answer = ParseJson(reply->body);
  int64_t received = -1;
  if (answer.ok() && answer->is_object()) {
    if (const json::value* b = answer->as_object().if_contains("bytes");
        b != nullptr && b->is_number()) {
      received = b->to_number<int64_t>();
    }
  }
  if (received != sent) {
    return Unavailable("upload: the platform received " + std::to_string(received) + " of the " +
                       std::to_string(sent) + " bytes sent");
  }
  if (sent == 0 || end <= first_ns) return Unavailable("upload: nothing was sent");
  return std::make_pair(Mbits(sent, end - first_ns), sent);
}

}  // namespace

StatusOr<NetworkResult> RunNetworkThroughput(const NetworkOptions& o) {
  GPUNEX_ASSIGN_OR_RETURN(Target t, ResolveTarget(o));
  NetworkResult r;
  GPUNEX_ASSIGN_OR_RETURN(auto down, RunDownload(o, t));
  r.download_mbit_s = down.first;
  r.download_bytes = down.second;
  GPUNEX_ASSIGN_OR_RETURN(auto up, RunUpload(o, t));
  r.upload_mbit_s = up.first;
  r.upload_bytes = up.second;
  return r;
}

}  // namespace gpunex::agent::bench
