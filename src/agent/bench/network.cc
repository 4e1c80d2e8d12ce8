#include "agent/bench/network.h"

#include <curl/curl.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/link/endpoint.h"
#include "common/json.h"

namespace gpunex::agent::bench {
namespace {

constexpr int64_t kMaxBytes = 1LL << 30;
constexpr double kMaxSeconds = 600;
constexpr long kConnectTimeoutS = 15;
// Beyond max_seconds, how long a transfer may take to wind down before it is cut.
constexpr double kGraceSeconds = 30;
constexpr size_t kPatternBytes = 1 << 20;
constexpr size_t kMaxErrorBody = 4096;
// libcurl's largest receive and send buffers (CURL_MAX_READ_SIZE; the upload maximum).
constexpr long kReceiveBuffer = 512 * 1024;
constexpr long kSendBuffer = 2 * 1024 * 1024;

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// What the upload sends, over and over: incompressible bytes (xorshift64*).
const char* Pattern() {
  static const std::vector<char> pattern = [] {
    std::vector<char> p(kPatternBytes);
    uint64_t x = 0x2545F4914F6CDD1DULL;
    for (size_t i = 0; i < p.size(); i += 8) {
      x ^= x >> 12;
      x ^= x << 25;
      x ^= x >> 27;
      const uint64_t v = x * 0x2545F4914F6CDD1DULL;
      std::memcpy(p.data() + i, &v, 8);
    }
    return p;
  }();
  return pattern.data();
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
  std::optional<HttpProxy> proxy;
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
  auto endpoint = ParseWebSocketUrl(base);
  if (!endpoint.ok()) return InvalidArgument("base_url: " + endpoint.status().message());
  GPUNEX_ASSIGN_OR_RETURN(std::optional<HttpProxy> proxy, ChooseProxy(*endpoint, o.proxy));
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
  curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, kSendBuffer);
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

struct Upload {
  int64_t bytes = 0;  // to send
  int64_t limit_ns = 0;
  int64_t sent = 0;
  int64_t first_ns = 0;
  Reply reply;
};

size_t OnUpload(char* buf, size_t size, size_t n, void* user) {
  auto* u = static_cast<Upload*>(user);
  const int64_t now = NowNs();
  if (u->first_ns == 0) u->first_ns = now;
  if (u->sent >= u->bytes || now - u->first_ns >= u->limit_ns) return 0;  // ends the chunked body
  size_t len =
      static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(size * n), u->bytes - u->sent));
  size_t done = 0;
  while (done < len) {
    const size_t at = static_cast<size_t>((u->sent + static_cast<int64_t>(done)) %
                                          static_cast<int64_t>(kPatternBytes));
    const size_t piece = std::min(len - done, kPatternBytes - at);
    std::memcpy(buf + done, Pattern() + at, piece);
    done += piece;
  }
  u->sent += static_cast<int64_t>(len);
  return len;
}

size_t OnUploadReply(char* p, size_t size, size_t n, void* user) {
  auto* r = static_cast<Reply*>(user);
  const size_t len = size * n;
  r->body.append(p, std::min(len, kMaxErrorBody - std::min(kMaxErrorBody, r->body.size())));
  return len;
}

StatusOr<std::pair<double, int64_t>> RunUpload(const NetworkOptions& o, const Target& t) {
  const std::string url = t.base + "/api/v1/agent/bench/upload";
  char errbuf[CURL_ERROR_SIZE] = {0};
  Slist headers =
      Headers(o, {"Content-Type: application/octet-stream", "Transfer-Encoding: chunked"});
  GPUNEX_ASSIGN_OR_RETURN(CurlHandle h, NewHandle(o, t, url, errbuf));
  Slist proxy_headers = ProxyHeaders(h.get(), t);
  Upload u;
  u.bytes = o.bytes;
  u.limit_ns = static_cast<int64_t>(o.max_seconds * 1e9);
  curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h.get(), CURLOPT_POST, 1L);
  curl_easy_setopt(h.get(), CURLOPT_READFUNCTION, OnUpload);
  curl_easy_setopt(h.get(), CURLOPT_READDATA, &u);
  curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, OnUploadReply);
  curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, &u.reply);
  const CURLcode rc = curl_easy_perform(h.get());
  const int64_t end = NowNs();
  curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &u.reply.status);
  if (u.reply.status != 0 && u.reply.status != 200) return StatusForReply(u.reply, "upload");
  if (rc != CURLE_OK)
    return CurlFailure(rc, errbuf, "upload (" + std::to_string(u.sent) + " bytes sent)");
  // The platform says how much arrived; it must be all that was sent.
  auto answer = ParseJson(u.reply.body);
  int64_t received = -1;
  if (answer.ok() && answer->is_object()) {
    if (const json::value* b = answer->as_object().if_contains("bytes");
        b != nullptr && b->is_number()) {
      received = b->to_number<int64_t>();
    }
  }
  if (received != u.sent) {
    return Unavailable("upload: the platform received " + std::to_string(received) + " of the " +
                       std::to_string(u.sent) + " bytes sent");
  }
  if (u.sent == 0 || end <= u.first_ns) return Unavailable("upload: nothing was sent");
  return std::make_pair(Mbits(u.sent, end - u.first_ns), u.sent);
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
