#include "agent/bench/network.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/tls_files.h"
#include "common/thread_annotations.h"

namespace gpunex::agent::bench {
namespace {

using namespace std::chrono_literals;

constexpr char kGoodToken[] = "gpx_a_good";

// One accepted connection, plain or TLS.
class Io {
 public:
  Io(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  ssize_t Recv(char* p, size_t n) {
    if (ssl_ == nullptr) return recv(fd_, p, n, 0);
    const int r = SSL_read(ssl_, p, static_cast<int>(n));
    return r > 0 ? r : -1;
  }
  // Whether all of [p, p + n) was sent.
  bool Send(const char* p, size_t n) {
    if (ssl_ == nullptr) return send(fd_, p, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
    return SSL_write(ssl_, p, static_cast<int>(n)) == static_cast<int>(n);
  }

 private:
  int fd_;
  SSL* ssl_;
};

// Reads a connection through a buffer: lines and exact lengths.
class Reader {
 public:
  explicit Reader(Io& io) : io_(io) {}
  bool Line(std::string* line) {
    for (;;) {
      size_t eol = buf_.find("\r\n");
      if (eol != std::string::npos) {
        *line = buf_.substr(0, eol);
        buf_.erase(0, eol + 2);
        return true;
      }
      if (!Fill()) return false;
    }
  }
  // Reads and drops `n` bytes, calling `pause` after each piece.
  bool Skip(size_t n, const std::function<void()>& pause) {
    while (n > 0) {
      if (buf_.empty() && !Fill()) return false;
      size_t take = std::min(n, buf_.size());
      buf_.erase(0, take);
      n -= take;
      pause();
    }
    return true;
  }

 private:
  bool Fill() {
    char tmp[65536];
    ssize_t r = io_.Recv(tmp, sizeof tmp);
    if (r <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(r));
    return true;
  }
  Io& io_;
  std::string buf_;
};

// A stand-in for gpunexd's benchmark endpoints, on http:// or, given TLS files, https://
// (and, when asked, for an HTTP proxy that answers CONNECT and then serves the tunnelled
// requests itself; plain HTTP only).
class FakePlatform {
 public:
  struct Seen {
    std::string method, target;
    std::map<std::string, std::string> headers;
  };

  explicit FakePlatform(const gpunex::testing::TlsFiles* tls = nullptr) {
    if (tls != nullptr) {
      ssl_ctx_ = SSL_CTX_new(TLS_server_method());
      SSL_CTX_use_certificate_chain_file(ssl_ctx_, tls->cert_path().c_str());
      SSL_CTX_use_PrivateKey_file(ssl_ctx_, tls->key_path().c_str(), SSL_FILETYPE_PEM);
    }
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(listener_, 16);
    socklen_t len = sizeof addr;
    getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~FakePlatform() {
    shutdown(listener_, SHUT_RDWR);
    thread_.join();
    close(listener_);
    if (ssl_ctx_ != nullptr) SSL_CTX_free(ssl_ctx_);
  }

  std::string url() const {
    return (ssl_ctx_ != nullptr ? "https://localhost:" : "http://127.0.0.1:") +
           std::to_string(port_);
  }
  int port() const { return port_; }
  std::vector<Seen> seen() {
    MutexLock lock(&mu_);
    return seen_;
  }

  // Knobs, set before use.
  int status = 200;           // another status answers every request with an error body
  int64_t claim_extra = 0;    // the upload answer claims this many bytes more
  int upload_status = 200;    // another status refuses the upload once its header is in
  int64_t refuse_after = -1;  // >= 0: the upload is refused (413) once this much has arrived
  bool send_continue = true;  // answers Expect: 100-continue
  std::chrono::microseconds pause{0};  // after each piece sent or received: a slow network

 private:
  void AcceptLoop() {
    for (;;) {
      int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      SSL* ssl = nullptr;
      if (ssl_ctx_ != nullptr) {
        ssl = SSL_new(ssl_ctx_);
        SSL_set_fd(ssl, fd);
        if (SSL_accept(ssl) == 1) {
          Io io(fd, ssl);
          Serve(io);
          SSL_shutdown(ssl);
        }
        SSL_free(ssl);
      } else {
        Io io(fd, nullptr);
        Serve(io);
      }
      close(fd);
    }
  }

  void Send(Io& io, const std::string& s) { io.Send(s.data(), s.size()); }

  void Serve(Io& io) {
    Reader in(io);
    for (;;) {
      Seen req;
      std::string line;
      if (!in.Line(&line)) return;
      size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
      req.method = line.substr(0, sp1);
      req.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
      while (in.Line(&line) && !line.empty()) {
        size_t colon = line.find(':');
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        req.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
      }
      {
        MutexLock lock(&mu_);
        seen_.push_back(req);
      }
      if (req.method == "CONNECT") {
        Send(io, "HTTP/1.1 200 Connection established\r\n\r\n");
        continue;  // the tunnelled requests follow on this connection
      }
      const bool authorized = req.headers["authorization"] == std::string("Bearer ") + kGoodToken;
      if (!authorized || status != 200) {
        const int code = authorized ? status : 401;
        const std::string body = R"({"error":{"code":"x","message":"refused by the fake"}})";
        Send(io, "HTTP/1.1 " + std::to_string(code) +
                     " No\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
        return;
      }
      const auto do_pause = [this] {
        if (pause.count() > 0) std::this_thread::sleep_for(pause);
      };
      if (req.method == "GET") {
        const int64_t n = std::stoll(req.target.substr(req.target.find("bytes=") + 6));
        Send(io, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                     std::to_string(n) + "\r\n\r\n");
        std::string piece(65536, 'd');
        for (int64_t left = n; left > 0;) {
          const size_t k = static_cast<size_t>(std::min<int64_t>(left, piece.size()));
          if (!io.Send(piece.data(), k)) return;  // the client left
          left -= static_cast<int64_t>(k);
          do_pause();
        }
        continue;
      }
      const auto refuse = [&](int code) {
        const std::string body = R"({"error":{"code":"x","message":"upload refused by the fake"}})";
        Send(io, "HTTP/1.1 " + std::to_string(code) +
                     " No\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
      };
      if (upload_status != 200) return refuse(upload_status);
      if (send_continue && req.headers["expect"] == "100-continue")
        Send(io, "HTTP/1.1 100 Continue\r\n\r\n");
      int64_t received = 0;
      for (;;) {  // chunked
        if (!in.Line(&line)) return;
        const int64_t size = std::stoll(line, nullptr, 16);
        if (size == 0) {
          in.Line(&line);
          break;
        }
        if (!in.Skip(static_cast<size_t>(size), do_pause) || !in.Line(&line)) return;
        received += size;
        if (refuse_after >= 0 && received >= refuse_after) {
          refuse(413);
          // Reads on for a while, as a server draining a refused body does, so that the
          // answer is not lost to a reset.
          in.Skip(64 << 20, [] {});
          return;
        }
      }
      const std::string body =
          "{\"bytes\":" + std::to_string(received + claim_extra) + ",\"seconds\":0.5}";
      Send(io, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\n\r\n" + body);
    }
  }

  SSL_CTX* ssl_ctx_ = nullptr;
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
  Mutex mu_;
  std::vector<Seen> seen_ GUARDED_BY(mu_);
};

NetworkOptions Options(const FakePlatform& p) {
  NetworkOptions o;
  o.base_url = p.url() + "/";
  o.token = kGoodToken;
  o.bytes = 8 << 20;
  o.max_seconds = 10;
  return o;
}

TEST(NetworkThroughput, MeasuresBothDirections) {
  FakePlatform platform;
  auto r = RunNetworkThroughput(Options(platform));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->download_bytes, 8 << 20);
  EXPECT_EQ(r->upload_bytes, 8 << 20);
  EXPECT_GT(r->download_mbit_s, 0);
  EXPECT_GT(r->upload_mbit_s, 0);
  auto seen = platform.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].method, "GET");
  EXPECT_EQ(seen[0].target, "/api/v1/agent/bench/download?bytes=8388608");
  EXPECT_EQ(seen[0].headers["authorization"], "Bearer gpx_a_good");
  EXPECT_EQ(seen[0].headers.count("accept-encoding"), 0u);  // nothing may compress
  EXPECT_EQ(seen[1].method, "POST");
  EXPECT_EQ(seen[1].target, "/api/v1/agent/bench/upload");
  EXPECT_EQ(seen[1].headers["transfer-encoding"], "chunked");
  EXPECT_EQ(seen[1].headers["authorization"], "Bearer gpx_a_good");
}

TEST(NetworkThroughput, OverTlsWithTheCaFile) {
  gpunex::testing::TlsFiles files;
  ASSERT_TRUE(files.ok());
  FakePlatform platform(&files);
  NetworkOptions o = Options(platform);
  o.bytes = (3 << 20) + 5;  // a last chunk shorter than the others
  o.ca_file = files.cert_path();
  auto r = RunNetworkThroughput(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->download_bytes, o.bytes);
  EXPECT_EQ(r->upload_bytes, o.bytes);
  auto seen = platform.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].method, "POST");
  EXPECT_EQ(seen[1].headers["host"], "localhost:" + std::to_string(platform.port()));
  EXPECT_EQ(seen[1].headers["expect"], "100-continue");
  // Without the CA, the certificate is refused.
  o.ca_file.clear();
  auto untrusted = RunNetworkThroughput(o);
  EXPECT_EQ(untrusted.status().code(), StatusCode::kUnavailable);
}

TEST(NetworkThroughput, StopsAfterMaxSecondsAndCountsWhatMoved) {
  FakePlatform platform;
  platform.pause = 5ms;  // at most ~13 MiB/s each way
  NetworkOptions o = Options(platform);
  o.bytes = 1LL << 30;
  o.max_seconds = 0.5;
  const auto start = std::chrono::steady_clock::now();
  auto r = RunNetworkThroughput(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_GT(r->download_bytes, 0);
  EXPECT_LT(r->download_bytes, o.bytes);
  EXPECT_GT(r->upload_bytes, 0);
  EXPECT_LT(r->upload_bytes, o.bytes);
  EXPECT_GT(r->download_mbit_s, 0);
  EXPECT_LT(r->download_mbit_s, 200);
  EXPECT_GT(r->upload_mbit_s, 0);
}

TEST(NetworkThroughput, RefusalsMapToStatuses) {
  FakePlatform platform;
  NetworkOptions o = Options(platform);
  o.token = "gpx_a_revoked";
  auto r = RunNetworkThroughput(o);
  EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(r.status().message().find("refused by the fake"), std::string::npos)
      << r.status().ToString();
  o = Options(platform);
  platform.status = 429;
  EXPECT_EQ(RunNetworkThroughput(o).status().code(), StatusCode::kResourceExhausted);
  platform.status = 404;
  EXPECT_EQ(RunNetworkThroughput(o).status().code(), StatusCode::kFailedPrecondition);
  platform.status = 503;
  EXPECT_EQ(RunNetworkThroughput(o).status().code(), StatusCode::kUnavailable);
}

TEST(NetworkThroughput, UploadRefusedBeforeItsBodySendsNone) {
  FakePlatform platform;
  platform.upload_status = 429;
  auto r = RunNetworkThroughput(Options(platform));
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("upload refused by the fake"), std::string::npos)
      << r.status().ToString();
}

TEST(NetworkThroughput, UploadRefusedMidwayStopsSending) {
  FakePlatform platform;
  platform.refuse_after = 2 << 20;
  NetworkOptions o = Options(platform);
  o.bytes = 1LL << 30;
  const auto start = std::chrono::steady_clock::now();
  auto r = RunNetworkThroughput(o);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  EXPECT_NE(r.status().message().find("413"), std::string::npos) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(NetworkThroughput, UploadGoesOnWhenNoContinueComes) {
  FakePlatform platform;
  platform.send_continue = false;
  const auto start = std::chrono::steady_clock::now();
  auto r = RunNetworkThroughput(Options(platform));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->upload_bytes, 8 << 20);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1s);  // waited for it, then sent
}

TEST(NetworkThroughput, UploadMustArriveWhole) {
  FakePlatform platform;
  platform.claim_extra = -1;
  auto r = RunNetworkThroughput(Options(platform));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("received"), std::string::npos) << r.status().ToString();
}

TEST(NetworkThroughput, NoPlatformIsUnavailable) {
  int port;
  {
    FakePlatform gone;
    port = gone.port();
  }
  NetworkOptions o;
  o.base_url = "http://127.0.0.1:" + std::to_string(port);
  o.token = kGoodToken;
  EXPECT_EQ(RunNetworkThroughput(o).status().code(), StatusCode::kUnavailable);
}

TEST(NetworkThroughput, GoesThroughTheProxyWithConnect) {
  FakePlatform platform;
  NetworkOptions o = Options(platform);
  // The fake answers CONNECT and serves the tunnelled requests itself.
  o.base_url = "http://platform.invalid:8080";
  o.proxy = "http://user:secret@127.0.0.1:" + std::to_string(platform.port());
  auto r = RunNetworkThroughput(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto seen = platform.seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].method, "CONNECT");
  EXPECT_EQ(seen[0].target, "platform.invalid:8080");
  EXPECT_EQ(seen[0].headers["proxy-authorization"], "Basic dXNlcjpzZWNyZXQ=");
  EXPECT_EQ(seen[0].headers.count("authorization"), 0u);  // the token is for the platform only
  EXPECT_EQ(seen[1].method, "GET");
  EXPECT_EQ(seen[1].headers.count("proxy-authorization"), 0u);
  EXPECT_EQ(seen[2].method, "CONNECT");
  EXPECT_EQ(seen[3].method, "POST");
}

TEST(NetworkThroughput, RejectsBadOptions) {
  NetworkOptions o;
  o.base_url = "ftp://x";
  o.token = kGoodToken;
  EXPECT_EQ(RunNetworkThroughput(o).status().code(), StatusCode::kInvalidArgument);
  o.base_url = "http://127.0.0.1:1";
  o.bytes = 0;
  EXPECT_EQ(RunNetworkThroughput(o).status().code(), StatusCode::kInvalidArgument);
  o.bytes = 1 << 20;
  o.token = "";
  EXPECT_EQ(RunNetworkThroughput(o).status().code(), StatusCode::kInvalidArgument);
  o.token = kGoodToken;
  o.max_seconds = 0;
  EXPECT_EQ(RunNetworkThroughput(o).status().code(), StatusCode::kInvalidArgument);
  o.max_seconds = 1;
  o.proxy = "socks5://127.0.0.1:1080";
  EXPECT_EQ(RunNetworkThroughput(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpunex::agent::bench
