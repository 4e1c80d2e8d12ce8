// The relay (issue 25, docs/access.md) against a direct connection, side by side in one
// run: the platform's relay::Relay behind a real gpunexd HTTP server on loopback, the
// agent's DataLink on a real WebSocket client, and a "port" server standing in for a
// rental's container. The customer's end of a relayed stream is the relay's Stream API in
// gpunexd's process (what the port-connect WebSocket drives); a direct connection is a
// TCP socket to the same server.
//
// The path between the platform and the agent is the "internet" hop; the agent's hop to
// the port stays on the machine (a Unix socket here, as the container's loopback is).
// With DELAY_MS, a userspace proxy delays every byte on the internet hop by DELAY_MS/2
// each way and keeps at most a TCP receive window in flight (this kernel has no netem;
// without it the proxy is left out): the agent's WebSocket goes through it, and so does
// the direct connection.
//
// Figures:
//   1. upload and download throughput, relay / direct, at 0 and DELAY_MS round trip (on
//      loopback the median of RUNS runs, with a plain TCP proxy's figure for reference);
//   2. STREAMS concurrent streams, each echoing 64 KiB with a checksum check;
//   3. one stalled reader: another stream's download throughput and the round trip of a
//      small echo on a third, without and with the stall.
//
// Env: MB (256), DELAY_MS (50), STREAMS (1000), RUNS (3: loopback and stall rounds),
// WINDOW_KIB (the kernel's tcp_rmem maximum), STREAM_WINDOW_MIB
// (mux::Options::max_stream_window on both ends), CHUNK_KIB (64), and DIRECTION (up or
// down: that direction through the relay on loopback and nothing else, for profiles).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/link/data_link.h"
#include "common/allocator.h"
#include "common/log.h"
#include "common/net/websocket_client.h"
#include "platform/http/server.h"
#include "platform/relay/relay.h"

namespace gpunex {
namespace {

using Clock = std::chrono::steady_clock;
using platform::relay::Relay;
using platform::relay::Stream;
using platform::relay::StreamEnd;
using platform::relay::StreamSink;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoll(v) : fallback;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

uint16_t PortOf(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

int ListenTcp() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 4096) != 0) {
    std::perror("listen");
    std::exit(1);
  }
  return fd;
}

int ConnectTcp(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// The "port": per connection, a command byte, then
//   'U': read to end of file, answer the byte count (8 bytes);
//   'D' + 8-byte N: send N bytes, then end of file;
//   'E': echo to end of file.
class PortServer {
 public:
  PortServer() : tcp_(ListenTcp()) {
    unix_path_ = "/tmp/gpunex-relay-bench-" + std::to_string(getpid()) + ".sock";
    unlink(unix_path_.c_str());
    unix_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", unix_path_.c_str());
    if (bind(unix_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(unix_, 4096) != 0) {
      std::perror("unix listen");
      std::exit(1);
    }
    for (int fd : {tcp_, unix_}) {
      threads_.emplace_back([fd] {
        for (;;) {
          const int c = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
          if (c < 0) return;
          std::thread(Serve, c).detach();
        }
      });
    }
  }
  ~PortServer() {
    shutdown(tcp_, SHUT_RDWR);
    shutdown(unix_, SHUT_RDWR);
    close(tcp_);
    close(unix_);
    for (auto& t : threads_) t.join();
    unlink(unix_path_.c_str());
  }
  uint16_t tcp_port() const { return PortOf(tcp_); }

  // A non-blocking connection over the Unix socket (the agent's dialer).
  StatusOr<int> DialUnix() const {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", unix_path_.c_str());
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      close(fd);
      return Unavailable("the port server does not answer");
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
  }

 private:
  static void Serve(int c) {
    char cmd = 0;
    std::vector<char> buf(256 * 1024);
    if (ReadAll(c, &cmd, 1)) {
      if (cmd == 'U') {
        uint64_t total = 0;
        for (ssize_t n; (n = read(c, buf.data(), buf.size())) > 0;)
          total += static_cast<uint64_t>(n);
        WriteAll(c, reinterpret_cast<const char*>(&total), sizeof total);
      } else if (cmd == 'D') {
        uint64_t n = 0;
        if (ReadAll(c, reinterpret_cast<char*>(&n), sizeof n)) {
          while (n > 0) {
            const size_t k = std::min<uint64_t>(n, buf.size());
            if (!WriteAll(c, buf.data(), k)) break;
            n -= k;
          }
        }
      } else if (cmd == 'E') {
        for (ssize_t n; (n = read(c, buf.data(), buf.size())) > 0;) {
          if (!WriteAll(c, buf.data(), static_cast<size_t>(n))) break;
        }
      }
    }
    shutdown(c, SHUT_WR);
    char drain[4096];
    while (read(c, drain, sizeof drain) > 0) {
    }
    close(c);
  }

  int tcp_;
  int unix_ = -1;
  std::string unix_path_;
  std::vector<std::thread> threads_;
};

// The most a TCP receiver on this machine lets a sender have unacknowledged: the
// largest receive buffer the kernel's autotuning grows to (net.ipv4.tcp_rmem, its third
// figure), or WINDOW_KIB.
size_t TcpWindowBytes() {
  if (const int64_t kib = EnvInt("WINDOW_KIB", 0); kib > 0) return static_cast<size_t>(kib) << 10;
  size_t min = 0, def = 0, max = 0;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/tcp_rmem", "r")) {
    if (std::fscanf(f, "%zu %zu %zu", &min, &def, &max) != 3) max = 0;
    std::fclose(f);
  }
  return max > 0 ? max : size_t{6} << 20;
}

// A plain TCP proxy on loopback to `target`: a thread per direction that reads and
// writes. What any relay that carries bytes through a process of its own costs at least
// (two socket hops where a direct connection has one), for reference.
class PlainProxy {
 public:
  explicit PlainProxy(uint16_t target) : fd_(ListenTcp()) {
    thread_ = std::thread([this, target] {
      for (;;) {
        const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        const int up = ConnectTcp(target);
        auto pair = std::make_shared<std::atomic<int>>(2);
        for (const std::pair<int, int>& way : {std::pair{c, up}, std::pair{up, c}}) {
          std::thread([from = way.first, to = way.second, pair] {
            std::vector<char> buf(256 * 1024);
            for (ssize_t n; (n = read(from, buf.data(), buf.size())) > 0;) {
              if (!WriteAll(to, buf.data(), static_cast<size_t>(n))) break;
            }
            shutdown(to, SHUT_WR);
            if (--*pair == 0) {
              close(from);
              close(to);
            }
          }).detach();
        }
      }
    });
  }
  ~PlainProxy() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  uint16_t port() const { return PortOf(fd_); }

 private:
  int fd_;
  std::thread thread_;
};

// A TCP proxy on loopback to `target` that emulates a path with `one_way` latency each
// way and no bandwidth limit of its own, as TCP sees it: every byte arrives `one_way`
// after it was sent, and at most `window` bytes are in flight in each direction, a byte
// counting from when it is sent until its acknowledgement would be back (written on the
// far side, plus `one_way`). A real 50 ms path bounds a TCP connection so, by its
// receiver's window; a proxy that only delays would give the direct connection an
// unbounded one (the loopback connections under it see no round trip at all).
class DelayProxy {
 public:
  DelayProxy(uint16_t target, std::chrono::milliseconds one_way, size_t window)
      : fd_(ListenTcp()), target_(target), one_way_(one_way), window_(window) {
    thread_ = std::thread([this] {
      for (;;) {
        const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        const int up = ConnectTcp(target_);
        const int one = 1;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        auto pair = std::make_shared<std::atomic<int>>(2);
        Pipe(c, up, pair);
        Pipe(up, c, pair);
      }
    });
  }
  ~DelayProxy() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  uint16_t port() const { return PortOf(fd_); }

 private:
  struct Chunk {
    Clock::time_point due;
    std::string bytes;  // empty: end of file
  };
  struct Line {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Chunk> chunks;
    size_t in_flight = 0;                                   // read and not acknowledged yet
    std::deque<std::pair<Clock::time_point, size_t>> acks;  // when bytes stop counting
  };

  // from → (delay) → to, on two threads (a reader stamping, a writer waiting).
  void Pipe(int from, int to, std::shared_ptr<std::atomic<int>> pair) {
    auto line = std::make_shared<Line>();
    const auto delay = one_way_;
    const size_t window = window_;
    std::thread([from, line, delay, window] {
      std::vector<char> buf(256 * 1024);
      for (;;) {
        size_t room = 0;
        {
          // Wait for acknowledgements while the window is full.
          std::unique_lock<std::mutex> lock(line->mu);
          for (;;) {
            const auto now = Clock::now();
            while (!line->acks.empty() && line->acks.front().first <= now) {
              line->in_flight -= line->acks.front().second;
              line->acks.pop_front();
            }
            if (line->in_flight < window) break;
            if (line->acks.empty()) {
              line->cv.wait(lock);
            } else {
              line->cv.wait_until(lock, line->acks.front().first);
            }
          }
          room = std::min(buf.size(), window - line->in_flight);
        }
        const ssize_t n = read(from, buf.data(), room);
        std::lock_guard<std::mutex> lock(line->mu);
        if (n > 0) line->in_flight += static_cast<size_t>(n);
        line->chunks.push_back({Clock::now() + delay, n > 0 ? std::string(buf.data(), n) : ""});
        line->cv.notify_all();
        if (n <= 0) return;
      }
    }).detach();
    std::thread([from, to, line, pair, delay] {
      for (;;) {
        Chunk c;
        {
          std::unique_lock<std::mutex> lock(line->mu);
          line->cv.wait(lock, [&] { return !line->chunks.empty(); });
          c = std::move(line->chunks.front());
          line->chunks.pop_front();
        }
        std::this_thread::sleep_until(c.due);
        if (c.bytes.empty() || !WriteAll(to, c.bytes.data(), c.bytes.size())) break;
        std::lock_guard<std::mutex> lock(line->mu);
        line->acks.emplace_back(Clock::now() + delay, c.bytes.size());
        line->cv.notify_all();
      }
      shutdown(to, SHUT_WR);
      if (--*pair == 0) {
        close(from);
        close(to);
      }
    }).detach();
  }

  int fd_;
  uint16_t target_;
  std::chrono::milliseconds one_way_;
  size_t window_;
  std::thread thread_;
};

// The customer's end of a relayed stream: counts or keeps what arrives.
class BenchSink final : public StreamSink {
 public:
  explicit BenchSink(bool keep = false) : keep_(keep) {}
  void Bind(Stream* s) {
    std::lock_guard<std::mutex> lock(mu_);
    stream_ = s;
  }
  void OnReadable() override {
    std::lock_guard<std::mutex> lock(mu_);
    ReadLocked();
  }
  void OnRoom() override {
    std::lock_guard<std::mutex> lock(mu_);
    room_ = true;
    cv_.notify_all();
  }
  void OnFinished() override {
    std::lock_guard<std::mutex> lock(mu_);
    ReadLocked();
  }
  void OnEnded(const StreamEnd& end) override {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    clean_ = end.clean;
    stream_ = nullptr;
    cv_.notify_all();
  }
  void Stall(bool stalled) {
    std::lock_guard<std::mutex> lock(mu_);
    stalled_ = stalled;
    if (!stalled) ReadLocked();
  }
  bool Write(std::string_view data) {
    std::unique_lock<std::mutex> lock(mu_);
    while (!data.empty()) {
      if (stream_ == nullptr) return false;
      auto n = stream_->Write(data);
      if (!n.ok()) return false;
      data.remove_prefix(*n);
      if (*n == 0) {
        cv_.wait(lock, [&] { return room_ || ended_; });
        room_ = false;
      }
    }
    return true;
  }
  // Waits for the end (or for `bytes` received when not 0); whether it came.
  bool Wait(uint64_t bytes = 0, std::chrono::seconds timeout = std::chrono::seconds(600)) {
    std::unique_lock<std::mutex> lock(mu_);
    waiting_for_ = bytes;
    return cv_.wait_for(lock, timeout, [&] { return bytes ? received_ >= bytes : ended_; });
  }
  uint64_t received() {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }
  std::string kept() {
    std::lock_guard<std::mutex> lock(mu_);
    return kept_;
  }
  bool clean() {
    std::lock_guard<std::mutex> lock(mu_);
    return clean_;
  }

 private:
  void ReadLocked() {
    if (stalled_ || stream_ == nullptr) return;
    for (;;) {
      std::string b = stream_->Read(1 << 20);
      if (b.empty()) break;
      received_ += b.size();
      if (keep_) kept_ += b;
    }
    // Only when what Wait waits for came: a waiter woken at every read would cost the
    // relay (which shares the cores) a thread switch per read.
    if (waiting_for_ == 0 || received_ >= waiting_for_) cv_.notify_all();
  }

  const bool keep_;
  std::mutex mu_;
  std::condition_variable cv_;
  Stream* stream_ = nullptr;
  uint64_t received_ = 0;
  uint64_t waiting_for_ = 0;  // the bytes Wait waits for (0: the end)
  std::string kept_;
  bool ended_ = false, clean_ = false, stalled_ = false, room_ = false;
};

// gpunexd's relay and one agent's data link, its WebSocket through `via` (a proxy's port)
// or straight to the server.
class Rig {
 public:
  explicit Rig(const PortServer& port,
               std::chrono::milliseconds delay = std::chrono::milliseconds(0)) {
    platform::http::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.websocket_routes["/api/v1/agent/data"] =
        [this](const platform::http::Request&,
               std::shared_ptr<platform::http::WebSocketConnection> conn)
        -> StatusOr<std::shared_ptr<platform::http::WebSocketSession>> {
      return relay_.Attach("mch_bench", std::move(conn));
    };
    auto server = platform::http::Server::Create(o, [](platform::http::Request&) {
      return platform::http::ErrorResponse(NotFound("no such route"));
    });
    if (!server.ok()) {
      std::fprintf(stderr, "server: %s\n", server.status().ToString().c_str());
      std::exit(1);
    }
    server_ = std::move(*server);
    server_thread_ = std::thread([this] { server_->Run(); });
    uint16_t ws_port = server_->port();
    if (delay.count() > 0) {
      proxy_ = std::make_unique<DelayProxy>(ws_port, delay / 2, TcpWindowBytes());
      ws_port = proxy_->port();
    }
    agent::DataLinkOptions lo;
    lo.mux.max_chunk = static_cast<uint32_t>(EnvInt("CHUNK_KIB", 64) * 1024);
    if (const int64_t w = EnvInt("STREAM_WINDOW_MIB", 0); w > 0) {
      lo.mux.max_stream_window = static_cast<uint32_t>(w << 20);
      lo.mux.connection_window = std::max<uint64_t>(lo.mux.connection_window, 4ull * (w << 20));
    }
    link_ = std::make_unique<agent::DataLink>(
        [&port](const StreamTarget&) { return port.DialUnix(); }, lo);
    net::WebSocketClientOptions wo;
    wo.binary = true;
    auto client = net::WebSocketClient::Connect(
        "ws://127.0.0.1:" + std::to_string(ws_port) + "/api/v1/agent/data", wo);
    if (!client.ok()) {
      std::fprintf(stderr, "connect: %s\n", client.status().ToString().c_str());
      std::exit(1);
    }
    client_ = std::move(*client);
    agent_ = std::thread([this] { (void)link_->Serve(*client_); });
    while (!relay_.Connected("mch_bench"))
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~Rig() {
    link_->Stop();
    agent_.join();
    client_->Close();
    server_->Shutdown();
    server_thread_.join();
  }

  std::unique_ptr<Stream> Open(const std::shared_ptr<BenchSink>& sink) {
    auto s = relay_.Open("mch_bench", StreamTarget{"wkl_bench", 1}, sink);
    if (!s.ok()) {
      std::fprintf(stderr, "open: %s\n", s.status().ToString().c_str());
      std::exit(1);
    }
    sink->Bind(s->get());
    return std::move(*s);
  }

 private:
  Relay relay_{[] {
    platform::relay::RelayOptions o;
    o.max_streams_per_workload = 1 << 20;  // the streams below are all one workload's
    o.mux.max_chunk = static_cast<uint32_t>(EnvInt("CHUNK_KIB", 64) * 1024);
    if (const int64_t w = EnvInt("STREAM_WINDOW_MIB", 0); w > 0) {
      o.mux.max_stream_window = static_cast<uint32_t>(w << 20);
      o.mux.connection_window = std::max<uint64_t>(o.mux.connection_window, 4ull * (w << 20));
    }
    return o;
  }()};
  std::unique_ptr<platform::http::Server> server_;
  std::thread server_thread_;
  std::unique_ptr<DelayProxy> proxy_;
  std::unique_ptr<agent::DataLink> link_;
  std::unique_ptr<net::WebSocketClient> client_;
  std::thread agent_;
};

uint64_t U64(const std::string& s) {
  uint64_t v = 0;
  std::memcpy(&v, s.data(), std::min(s.size(), sizeof v));
  return v;
}

std::string Command(char c, uint64_t n = 0) {
  std::string s(1, c);
  if (c == 'D') s.append(reinterpret_cast<const char*>(&n), sizeof n);
  return s;
}

// MB/s of an upload through the relay (customer → port).
double RelayUpload(Rig& rig, uint64_t bytes) {
  const std::string chunk(1 << 20, 'x');
  auto up = std::make_shared<BenchSink>(true);
  auto s = rig.Open(up);
  const auto t0 = Clock::now();
  up->Write(Command('U'));
  for (uint64_t sent = 0; sent < bytes; sent += chunk.size()) up->Write(chunk);
  (void)s->Finish();
  up->Wait();
  const double up_s = Seconds(Clock::now() - t0);
  if (U64(up->kept()) != bytes)
    std::fprintf(stderr, "upload: the port counted %llu\n",
                 static_cast<unsigned long long>(U64(up->kept())));
  return bytes / up_s / 1e6;
}

// MB/s of a download through the relay (port → customer).
double RelayDownload(Rig& rig, uint64_t bytes) {
  auto down = std::make_shared<BenchSink>();
  auto d = rig.Open(down);
  const auto t1 = Clock::now();
  down->Write(Command('D', bytes));
  down->Wait(bytes);
  const double down_s = Seconds(Clock::now() - t1);
  return bytes / down_s / 1e6;
}

// MB/s of an upload (customer → port) and a download through the relay.
std::pair<double, double> RelayThroughput(Rig& rig, uint64_t bytes) {
  // DIRECTION=up or down measures that alone (for a profile of one of them).
  const char* only = std::getenv("DIRECTION");
  double up_mbps = 0, down_mbps = 0;
  if (only == nullptr || std::string(only) != "down") up_mbps = RelayUpload(rig, bytes);
  if (only == nullptr || std::string(only) != "up") down_mbps = RelayDownload(rig, bytes);
  return {up_mbps, down_mbps};
}

std::pair<double, double> DirectThroughput(uint16_t port, uint64_t bytes) {
  const std::string chunk(1 << 20, 'x');
  int fd = ConnectTcp(port);
  const auto t0 = Clock::now();
  WriteAll(fd, "U", 1);
  for (uint64_t sent = 0; sent < bytes; sent += chunk.size())
    WriteAll(fd, chunk.data(), chunk.size());
  shutdown(fd, SHUT_WR);
  uint64_t counted = 0;
  ReadAll(fd, reinterpret_cast<char*>(&counted), sizeof counted);
  const double up_s = Seconds(Clock::now() - t0);
  close(fd);
  fd = ConnectTcp(port);
  const auto t1 = Clock::now();
  const std::string cmd = Command('D', bytes);
  WriteAll(fd, cmd.data(), cmd.size());
  std::vector<char> buf(1 << 20);
  uint64_t got = 0;
  for (ssize_t n; (n = read(fd, buf.data(), buf.size())) > 0;) got += static_cast<uint64_t>(n);
  const double down_s = Seconds(Clock::now() - t1);
  close(fd);
  if (counted != bytes || got != bytes) std::fprintf(stderr, "direct: short transfer\n");
  return {bytes / up_s / 1e6, bytes / down_s / 1e6};
}

// The median upload and the median download of several runs.
std::pair<double, double> Median(const std::vector<std::pair<double, double>>& runs) {
  std::vector<double> up, down;
  for (auto [u, d] : runs) {
    up.push_back(u);
    down.push_back(d);
  }
  std::sort(up.begin(), up.end());
  std::sort(down.begin(), down.end());
  return {up[up.size() / 2], down[down.size() / 2]};
}

void Row(const char* what, std::pair<double, double> relay, std::pair<double, double> direct) {
  std::printf("| %s | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f |\n", what, relay.first, direct.first,
              relay.first / direct.first, relay.second, direct.second,
              relay.second / direct.second);
}

// Milliseconds of a 1-byte echo round trip on a stream already open.
double EchoRoundTripMs(BenchSink& sink, uint64_t* seen) {
  const auto t = Clock::now();
  sink.Write("p");
  sink.Wait(++*seen);
  return Seconds(Clock::now() - t) * 1e3;
}

}  // namespace
}  // namespace gpunex

int main() {
  using namespace gpunex;
  SetLogLevel(LogLevel::kError);
  KeepFreedMemoryForReuse();  // as gpunexd and the agent do
  const uint64_t bytes = static_cast<uint64_t>(EnvInt("MB", 256)) << 20;
  const auto delay = std::chrono::milliseconds(EnvInt("DELAY_MS", 50));
  const int streams = static_cast<int>(EnvInt("STREAMS", 1000));
  const int runs = static_cast<int>(std::max<int64_t>(1, EnvInt("RUNS", 3)));
  PortServer port;
  if (std::getenv("DIRECTION") != nullptr) {
    // One direction through the relay on loopback, and nothing else: for profiles.
    Rig rig(port);
    auto [up, down] = RelayThroughput(rig, bytes);
    std::printf("relay on loopback, MB/s: upload %.0f, download %.0f\n", up, down);
    return 0;
  }

  std::printf("relay_bench: %llu MiB each way; MB/s, relay / direct\n\n",
              static_cast<unsigned long long>(bytes >> 20));
  std::printf(
      "| path | upload relay | upload direct | ratio | download relay | download direct | ratio |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  {
    // The median of RUNS (default 3) runs each: loopback figures move with the VM's load.
    Rig rig(port);
    PlainProxy plain(port.tcp_port());
    std::vector<std::pair<double, double>> relay, proxied, direct;
    for (int i = 0; i < runs; ++i) {
      relay.push_back(RelayThroughput(rig, bytes));
      proxied.push_back(DirectThroughput(plain.port(), bytes));
      direct.push_back(DirectThroughput(port.tcp_port(), bytes));
    }
    Row("loopback", Median(relay), Median(direct));
    Row("loopback, a plain TCP proxy (read/write threads) for reference", Median(proxied),
        Median(direct));
  }
  if (delay.count() > 0) {
    Rig rig(port, delay);
    DelayProxy direct(port.tcp_port(), delay / 2, TcpWindowBytes());
    char what[96];
    std::snprintf(what, sizeof what, "%lld ms round trip (emulated, TCP window %zu KiB)",
                  static_cast<long long>(delay.count()), TcpWindowBytes() >> 10);
    Row(what, RelayThroughput(rig, bytes), DirectThroughput(direct.port(), bytes));
  }

  // Many streams at once.
  {
    Rig rig(port);
    std::vector<std::shared_ptr<BenchSink>> sinks;
    std::vector<std::unique_ptr<Stream>> open;
    const std::string payload = [] {
      std::string s(64 * 1024, '\0');
      for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 131 + 7);
      return s;
    }();
    const auto t0 = Clock::now();
    for (int i = 0; i < streams; ++i) {
      sinks.push_back(std::make_shared<BenchSink>(true));
      open.push_back(rig.Open(sinks.back()));
    }
    std::vector<std::thread> writers;
    for (int w = 0; w < 8; ++w) {
      writers.emplace_back([&, w] {
        for (int i = w; i < streams; i += 8) {
          sinks[i]->Write("E" + payload);
          (void)open[i]->Finish();
        }
      });
    }
    for (auto& t : writers) t.join();
    int exact = 0;
    for (int i = 0; i < streams; ++i) {
      sinks[i]->Wait();
      exact += sinks[i]->clean() && sinks[i]->kept() == payload ? 1 : 0;
    }
    std::printf("\n%d concurrent streams, 64 KiB echoed each: %d exact, %.2f s\n", streams, exact,
                Seconds(Clock::now() - t0));
  }

  // One stalled reader: RUNS rounds of a download without a stalled stream beside it and
  // one with (in turn, so that the VM's load falls on both alike); the medians.
  std::vector<double> mbps[2], rtts[2];
  for (int r = 0; r < runs; ++r) {
    for (bool stall : {false, true}) {
      Rig rig(port);
      auto probe = std::make_shared<BenchSink>();
      auto p = rig.Open(probe);
      probe->Write("E");
      uint64_t seen = 0;
      EchoRoundTripMs(*probe, &seen);  // warm
      std::shared_ptr<BenchSink> stalled;
      std::unique_ptr<Stream> s;
      if (stall) {
        stalled = std::make_shared<BenchSink>();
        s = rig.Open(stalled);
        stalled->Stall(true);
        stalled->Write(Command('D', uint64_t{1} << 34));  // far more than any window
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
      auto down = std::make_shared<BenchSink>();
      auto d = rig.Open(down);
      const auto t = Clock::now();
      down->Write(Command('D', bytes));
      while (!down->Wait(bytes, std::chrono::seconds(0))) {
        rtts[stall].push_back(EchoRoundTripMs(*probe, &seen));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      mbps[stall].push_back(bytes / Seconds(Clock::now() - t) / 1e6);
      s.reset();  // ends the stalled stream
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  for (bool stall : {false, true}) {
    std::printf("%s: download %.0f MB/s, a small echo's round trip p50 %.2f ms (%zu probes)\n",
                stall ? "with a stalled reader   " : "without a stalled reader",
                median(mbps[stall]), median(rtts[stall]), rtts[stall].size());
  }
  return 0;
}
