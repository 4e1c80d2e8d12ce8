// The relay and the agent's end of the data channel (agent/link/data_link.h) together:
// a real server and a real WebSocket client on loopback, streams to a TCP echo server
// standing in for a container's port.
#include "platform/relay/relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "agent/link/data_link.h"
#include "common/net/websocket_client.h"
#include "common/thread_annotations.h"
#include "platform/http/server.h"
#include "platform/http/testing/test_server.h"
#include "platform/relay/peer.h"

namespace gpunex::platform::relay {
namespace {

using namespace std::chrono_literals;
using http::testing::TestOptions;
using http::testing::TestServer;

constexpr char kMachine[] = "mch_test";
constexpr char kWorkload[] = "wkl_test";

// A TCP server on 127.0.0.1 that echoes every connection until its client finishes,
// then finishes too.
class EchoServer {
 public:
  EchoServer() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(fd_, 1024), 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        MutexLock lock(&mu_);
        conns_.emplace_back([c] {
          char buf[65536];
          for (;;) {
            const ssize_t n = read(c, buf, sizeof buf);
            if (n <= 0) break;
            for (ssize_t off = 0; off < n;) {
              const ssize_t w = write(c, buf + off, static_cast<size_t>(n - off));
              if (w <= 0) break;
              off += w;
            }
          }
          shutdown(c, SHUT_WR);
          close(c);
        });
      }
    });
  }
  ~EchoServer() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
    MutexLock lock(&mu_);
    for (auto& t : conns_) t.join();
  }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  Mutex mu_;
  std::vector<std::thread> conns_ GUARDED_BY(mu_);
};

// A non-blocking socket connected to 127.0.0.1:port.
StatusOr<int> DialLoopback(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return Unavailable("nothing listens on port " + std::to_string(port));
  }
  const int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  return fd;
}

// A socket whose far end has written "goodbye" and closed already, reading nothing: an
// exec whose command ended before the platform's last bytes for it arrived.
StatusOr<int> SaysGoodbyeAndCloses() {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) {
    return Internal("socketpair");
  }
  EXPECT_EQ(write(pair[1], "goodbye", 7), 7);
  close(pair[1]);
  return pair[0];
}

// Collects what a stream receives; reads as it comes unless paused.
class TestSink final : public StreamSink {
 public:
  void Bind(Stream* s) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    stream_ = s;
  }
  void OnAccepted() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    accepted_ = true;
    cv_.SignalAll();
  }
  void OnReadable() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    ReadLocked();
  }
  void OnRoom() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    ++rooms_;
    cv_.SignalAll();
  }
  void OnFinished() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    finished_ = true;
    ReadLocked();
    cv_.SignalAll();
  }
  void OnEnded(const StreamEnd& end) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    end_ = end;
    stream_ = nullptr;
    cv_.SignalAll();
  }

  void Pause(bool paused) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    paused_ = paused;
    if (!paused) ReadLocked();
  }
  // Writes all of `data`, waiting for room as needed; false after 20 s.
  bool WriteAll(std::string_view data) EXCLUDES(mu_) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    MutexLock lock(&mu_);
    while (!data.empty()) {
      if (stream_ == nullptr || std::chrono::steady_clock::now() > deadline) return false;
      auto n = stream_->Write(data);
      if (!n.ok()) return false;
      data.remove_prefix(*n);
      if (*n == 0) cv_.WaitFor(&mu_, 50ms);
    }
    return true;
  }
  // Waits until the stream has ended; false after `timeout`.
  bool WaitEnded(std::chrono::milliseconds timeout = 20s) EXCLUDES(mu_) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    MutexLock lock(&mu_);
    while (!end_ && std::chrono::steady_clock::now() < deadline) cv_.WaitFor(&mu_, 50ms);
    return end_.has_value();
  }
  bool WaitBytes(size_t n, std::chrono::milliseconds timeout = 20s) EXCLUDES(mu_) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    MutexLock lock(&mu_);
    while (got_.size() < n && std::chrono::steady_clock::now() < deadline) cv_.WaitFor(&mu_, 50ms);
    return got_.size() >= n;
  }
  std::string got() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return got_;
  }
  std::optional<StreamEnd> end() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return end_;
  }
  bool finished() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return finished_;
  }

 private:
  void ReadLocked() REQUIRES(mu_) {
    if (paused_ || stream_ == nullptr) return;
    for (;;) {
      std::string b = stream_->Read(1 << 20);
      if (b.empty()) break;
      got_ += b;
    }
    cv_.SignalAll();
  }

  Mutex mu_;
  CondVar cv_;
  Stream* stream_ GUARDED_BY(mu_) = nullptr;
  std::string got_ GUARDED_BY(mu_);
  bool accepted_ GUARDED_BY(mu_) = false;
  bool finished_ GUARDED_BY(mu_) = false;
  bool paused_ GUARDED_BY(mu_) = false;
  int rooms_ GUARDED_BY(mu_) = 0;
  std::optional<StreamEnd> end_ GUARDED_BY(mu_);
};

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(gen());
  return s;
}

// A relay behind a server, and an agent's data link connected to it.
class RelayTest : public ::testing::Test {
 protected:
  explicit RelayTest(RelayOptions options = {}) : relay_(options) {}

  void SetUp() override {
    http::ServerOptions o = TestOptions();
    AddRoutes(o);
    server_ = std::make_unique<TestServer>(o);
  }

  // The server's routes: the agent's data channel.
  virtual void AddRoutes(http::ServerOptions& o) {
    o.websocket_routes["/api/v1/agent/data"] =
        [this](const http::Request&, std::shared_ptr<http::WebSocketConnection> conn)
        -> StatusOr<std::shared_ptr<http::WebSocketSession>> {
      return relay_.Attach(kMachine, std::move(conn));
    };
  }

  void TearDown() override { StopAgent(); }

  // Connects an agent whose dialer reaches the echo server for port 7 and refuses others.
  void StartAgent() {
    link_ = std::make_unique<agent::DataLink>([this](const StreamTarget& t) -> StatusOr<int> {
      if (t.workload_id != kWorkload) return NotFound("no workload " + t.workload_id + " here");
      if (t.port == 8) return SaysGoodbyeAndCloses();
      if (t.port != 7)
        return PermissionDenied("port " + std::to_string(t.port) + " is not declared");
      return DialLoopback(echo_.port());
    });
    net::WebSocketClientOptions o;
    o.binary = true;
    o.max_message_bytes = 1 << 20;
    auto client = net::WebSocketClient::Connect(
        "ws://127.0.0.1:" + std::to_string(server_->port()) + "/api/v1/agent/data", o);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
    agent_ = std::thread([this] { served_ = link_->Serve(*client_); });
    for (int i = 0; i < 200 && !relay_.Connected(kMachine); ++i) std::this_thread::sleep_for(10ms);
    ASSERT_TRUE(relay_.Connected(kMachine));
  }

  void StopAgent() {
    if (!link_) return;
    link_->Stop();
    agent_.join();
    client_->Close();
    link_.reset();
  }

  // `n` streams to the test workload's port 7, each with a sink of its own; false when
  // one did not open.
  bool OpenMany(int n, std::vector<std::shared_ptr<TestSink>>* sinks,
                std::vector<std::unique_ptr<Stream>>* streams) {
    for (int i = 0; i < n; ++i) {
      sinks->push_back(std::make_shared<TestSink>());
      streams->push_back(OpenTo(sinks->back()));
      if (streams->back() == nullptr) return false;
    }
    return true;
  }

  // A stream to `port` of the test workload, bound to `sink`.
  std::unique_ptr<Stream> OpenTo(const std::shared_ptr<TestSink>& sink, uint16_t port = 7) {
    auto s = relay_.Open(kMachine, StreamTarget{kWorkload, port}, sink);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) return nullptr;
    sink->Bind(s->get());
    return std::move(*s);
  }

  EchoServer echo_;
  Relay relay_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<agent::DataLink> link_;
  std::unique_ptr<net::WebSocketClient> client_;
  std::thread agent_;
  Status served_;
};

TEST_F(RelayTest, BytesGoToThePortAndBackExactly) {
  StartAgent();
  auto sink = std::make_shared<TestSink>();
  auto stream = OpenTo(sink);
  ASSERT_NE(stream, nullptr);
  const std::string data = RandomBytes(8 << 20, 1);
  ASSERT_TRUE(sink->WriteAll(data));
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_TRUE(sink->WaitEnded());
  EXPECT_TRUE(sink->end()->clean) << sink->end()->reason;
  EXPECT_TRUE(sink->finished());
  EXPECT_EQ(sink->got().size(), data.size());
  EXPECT_TRUE(sink->got() == data);
  const RelayFigures f = relay_.Figures();
  EXPECT_EQ(f.channels, 1);
  EXPECT_EQ(f.streams, 0);
  EXPECT_EQ(f.bytes_to_agents, static_cast<int64_t>(data.size()));
  EXPECT_EQ(f.bytes_from_agents, static_cast<int64_t>(data.size()));
}

TEST_F(RelayTest, APortThatClosedFirstStillDeliversWhatItSaidBefore) {
  StartAgent();
  for (int round = 0; round < 20; ++round) {
    auto sink = std::make_shared<TestSink>();
    auto stream = OpenTo(sink, 8);
    ASSERT_NE(stream, nullptr);
    // The platform writes to a socket nobody reads any more: the agent's send fails
    // (EPIPE), and the stream still ends with what the port wrote, cleanly.
    ASSERT_TRUE(sink->WriteAll(std::string(256 << 10, 'x')));
    ASSERT_TRUE(stream->Finish().ok());
    ASSERT_TRUE(sink->WaitEnded());
    EXPECT_TRUE(sink->end()->clean) << round << ": " << sink->end()->reason;
    EXPECT_EQ(sink->got(), "goodbye") << round;
  }
}

TEST_F(RelayTest, APortTheAgentRefusesEndsTheStreamWithItsReason) {
  StartAgent();
  auto undeclared = std::make_shared<TestSink>();
  auto s1 = OpenTo(undeclared, 22);
  auto elsewhere = std::make_shared<TestSink>();
  auto s2 = relay_.Open(kMachine, StreamTarget{"wkl_other", 7}, elsewhere);
  ASSERT_TRUE(s2.ok());
  elsewhere->Bind(s2->get());
  ASSERT_TRUE(undeclared->WaitEnded());
  EXPECT_TRUE(undeclared->end()->refused);
  EXPECT_EQ(undeclared->end()->code, mux::Code::kRefused);
  EXPECT_EQ(undeclared->end()->reason, "port 22 is not declared");
  ASSERT_TRUE(elsewhere->WaitEnded());
  EXPECT_EQ(elsewhere->end()->code, mux::Code::kGone);
}

TEST_F(RelayTest, ManyStreamsAtOnceEachGetTheirOwnBytes) {
  StartAgent();
  constexpr int kStreams = 100;
  std::vector<std::shared_ptr<TestSink>> sinks;
  std::vector<std::unique_ptr<Stream>> streams;
  ASSERT_TRUE(OpenMany(kStreams, &sinks, &streams));
  std::vector<std::thread> writers;
  for (int i = 0; i < kStreams; ++i) {
    writers.emplace_back([&, i] {
      EXPECT_TRUE(sinks[i]->WriteAll(RandomBytes(64 * 1024 + i, 100 + i)));
      EXPECT_TRUE(streams[i]->Finish().ok());
    });
  }
  for (auto& w : writers) w.join();
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_TRUE(sinks[i]->WaitEnded()) << i;
    EXPECT_TRUE(sinks[i]->end()->clean) << i;
    EXPECT_TRUE(sinks[i]->got() == RandomBytes(64 * 1024 + i, 100 + i)) << i;
  }
}

TEST_F(RelayTest, AReaderThatStopsDoesNotStallTheOthers) {
  StartAgent();
  auto stalled = std::make_shared<TestSink>();
  auto s1 = OpenTo(stalled);
  stalled->Pause(true);
  // The stalled stream's echo fills its window and the echo server's socket, no more.
  std::thread stuck([&] { stalled->WriteAll(RandomBytes(16 << 20, 7)); });
  std::this_thread::sleep_for(500ms);
  auto moving = std::make_shared<TestSink>();
  auto s2 = OpenTo(moving);
  const std::string data = RandomBytes(8 << 20, 8);
  ASSERT_TRUE(moving->WriteAll(data));
  ASSERT_TRUE(s2->Finish().ok());
  ASSERT_TRUE(moving->WaitEnded());
  EXPECT_TRUE(moving->end()->clean);
  EXPECT_TRUE(moving->got() == data);
  // The stalled one got at most its window's worth, and gets the rest once it reads.
  EXPECT_TRUE(stalled->got().empty());
  stalled->Pause(false);
  stuck.join();
  ASSERT_TRUE(s1->Finish().ok());
  ASSERT_TRUE(stalled->WaitEnded());
  EXPECT_EQ(stalled->got().size(), size_t{16} << 20);
}

TEST_F(RelayTest, TheAgentGoingAwayEndsItsStreams) {
  StartAgent();
  auto sink = std::make_shared<TestSink>();
  auto stream = OpenTo(sink);
  ASSERT_TRUE(sink->WriteAll("hello"));
  ASSERT_TRUE(sink->WaitBytes(5));
  const auto start = std::chrono::steady_clock::now();
  StopAgent();
  ASSERT_TRUE(sink->WaitEnded(5s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_FALSE(sink->end()->clean);
  for (int i = 0; i < 200 && relay_.Connected(kMachine); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(relay_.Connected(kMachine));
  auto none = relay_.Open(kMachine, StreamTarget{kWorkload, 7}, sink);
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable);
}

// A RelayTest whose relay allows `kCap` streams per workload.
template <int kCap>
class RelayCappedAt : public RelayTest {
 protected:
  static RelayOptions Capped() {
    RelayOptions o;
    o.max_streams_per_workload = kCap;
    return o;
  }
  RelayCappedAt() : RelayTest(Capped()) {}
};

using RelayCapTest = RelayCappedAt<2>;

TEST_F(RelayCapTest, AWorkloadHasAtMostItsCapOfStreams) {
  StartAgent();
  auto a = std::make_shared<TestSink>(), b = std::make_shared<TestSink>();
  auto sa = OpenTo(a);
  auto sb = OpenTo(b);
  auto c = relay_.Open(kMachine, StreamTarget{kWorkload, 7}, a);
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  sa.reset();  // closing one makes room
  auto d = relay_.Open(kMachine, StreamTarget{kWorkload, 7}, a);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
}

using RelayManyTest = RelayCappedAt<2000>;

// More streams than either WebSocket queue takes messages at once (1 024): the frames are
// paced by count as well as by bytes, so neither side's queue overflows.
TEST_F(RelayManyTest, AThousandStreamsAtOnce) {
  StartAgent();
  constexpr int kStreams = 1000;
  std::vector<std::shared_ptr<TestSink>> sinks;
  std::vector<std::unique_ptr<Stream>> streams;
  ASSERT_TRUE(OpenMany(kStreams, &sinks, &streams));
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_TRUE(sinks[i]->WriteAll(RandomBytes(4096, 5000 + i))) << i;
    ASSERT_TRUE(streams[i]->Finish().ok());
  }
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_TRUE(sinks[i]->WaitEnded()) << i;
    EXPECT_TRUE(sinks[i]->end()->clean) << i << ": " << sinks[i]->end()->reason;
    EXPECT_TRUE(sinks[i]->got() == RandomBytes(4096, 5000 + i)) << i;
  }
  EXPECT_TRUE(relay_.Connected(kMachine));
}

// Workloads the test says have ended, as the rentals would.
std::atomic<bool> g_ended{false};

class RelayEndTest : public RelayTest {
 protected:
  static RelayOptions Checked() {
    RelayOptions o;
    o.tick = 100ms;
    o.unreachable =
        [](const std::vector<std::string>& workloads) -> StatusOr<std::vector<std::string>> {
      return g_ended.load() ? workloads : std::vector<std::string>{};
    };
    return o;
  }
  RelayEndTest() : RelayTest(Checked()) { g_ended = false; }
};

TEST_F(RelayEndTest, TheStreamsOfAnEndedRentalEndWithinATick) {
  StartAgent();
  auto sink = std::make_shared<TestSink>();
  auto stream = OpenTo(sink);
  ASSERT_TRUE(sink->WriteAll("still here"));
  ASSERT_TRUE(sink->WaitBytes(10));
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(sink->end().has_value());  // asked, and not ended
  g_ended = true;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(sink->WaitEnded(5s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(sink->end()->code, mux::Code::kGone);
  EXPECT_EQ(sink->end()->reason, "the rental has ended");
  EXPECT_EQ(relay_.Figures().streams, 0);
}

// What the meter of RelayMeterTest was handed.
Mutex g_meter_mu;
std::vector<PortTraffic> g_metered GUARDED_BY(g_meter_mu);

class RelayMeterTest : public RelayTest {
 protected:
  static RelayOptions MeteredOptions() {
    RelayOptions o;
    o.tick = 50ms;
    o.meter_interval = 100ms;
    o.meter = [](const std::vector<PortTraffic>& t) {
      MutexLock lock(&g_meter_mu);
      g_metered.insert(g_metered.end(), t.begin(), t.end());
    };
    o.unreachable =
        [](const std::vector<std::string>& workloads) -> StatusOr<std::vector<std::string>> {
      return g_ended.load() ? workloads : std::vector<std::string>{};
    };
    return o;
  }
  RelayMeterTest() : RelayTest(MeteredOptions()) {
    g_ended = false;
    MutexLock lock(&g_meter_mu);
    g_metered.clear();
  }

  // The bytes metered so far to (rental, port): in, out.
  static std::pair<int64_t, int64_t> Metered(const std::string& rental, uint16_t port) {
    MutexLock lock(&g_meter_mu);
    std::pair<int64_t, int64_t> sum{0, 0};
    for (const PortTraffic& t : g_metered) {
      if (t.rental_id == rental && t.port == port) {
        sum.first += t.in_bytes;
        sum.second += t.out_bytes;
      }
    }
    return sum;
  }
};

TEST_F(RelayMeterTest, EachRentalsPortIsMeteredBothWaysAndLeavesTheFiguresWhenItEnds) {
  StartAgent();
  auto sink = std::make_shared<TestSink>();
  auto s = relay_.Open(kMachine, StreamTarget{kWorkload, 7}, sink, "rnt_metered");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  sink->Bind(s->get());
  const std::string data = RandomBytes(300000, 9);
  ASSERT_TRUE(sink->WriteAll(data));
  ASSERT_TRUE(sink->WaitBytes(data.size()));
  // Handed to the meter in pieces, every interval: they add up to every byte.
  for (int i = 0; i < 100 && Metered("rnt_metered", 7).second < 300000; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(Metered("rnt_metered", 7), (std::pair<int64_t, int64_t>(300000, 300000)));
  RelayFigures f = relay_.Figures();
  ASSERT_EQ(f.ports.size(), 1u);
  EXPECT_EQ(f.ports[0].rental_id, "rnt_metered");
  EXPECT_EQ(f.ports[0].port, 7);
  EXPECT_EQ(f.ports[0].in_bytes, 300000);
  EXPECT_EQ(f.ports[0].out_bytes, 300000);
  // A stream opened without a rental is not metered.
  auto other = std::make_shared<TestSink>();
  auto unmetered = OpenTo(other);
  ASSERT_TRUE(other->WriteAll("x"));
  ASSERT_TRUE(other->WaitBytes(1));
  EXPECT_EQ(relay_.Figures().ports.size(), 1u);
  // The rental ends: its figures leave (its rows stay where the meter put them).
  g_ended = true;
  ASSERT_TRUE(sink->WaitEnded(5s));
  for (int i = 0; i < 100 && !relay_.Figures().ports.empty(); ++i)
    std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(relay_.Figures().ports.empty());
}

// Two instances of a cluster: the agent's data channel is on the relay behind the server
// (the holding instance, relay_), and `opener_` holds none: its route names the holding
// instance's peer path, with credentials the server checks.
constexpr char kPeerSecret[] = "Bearer ins_test.secret";

class PeerRelayTest : public RelayTest {
 protected:
  // The agent's data channel, and other instances' connections with the secret.
  void AddRoutes(http::ServerOptions& o) override {
    RelayTest::AddRoutes(o);
    o.websocket_routes[std::string(kPeerPath)] =
        [this](const http::Request& req, std::shared_ptr<http::WebSocketConnection> conn)
        -> StatusOr<std::shared_ptr<http::WebSocketSession>> {
      if (req.Header("authorization") != kPeerSecret) return Unauthenticated("not an instance");
      return relay_.AttachPeer(std::move(conn));
    };
  }

  void SetUp() override {
    RelayTest::SetUp();
    RelayOptions x;
    x.tick = 100ms;
    x.meter_interval = 100ms;
    x.meter = [this](const std::vector<PortTraffic>& t) {
      MutexLock lock(&mu_);
      for (const PortTraffic& p : t) {
        metered_in_ += p.in_bytes;
        metered_out_ += p.out_bytes;
        EXPECT_EQ(p.rental_id, "rnt_test");
      }
    };
    x.route = [this](const std::string& machine) -> StatusOr<std::optional<PeerRoute>> {
      if (machine != kMachine) return std::optional<PeerRoute>();
      return std::optional<PeerRoute>(PeerRoute{
          .instance_id = "ins_test",
          .url = "http://127.0.0.1:" + std::to_string(server_->port()) + std::string(kPeerPath),
          .authorization = authorization_,
          .ca_file = ""});
    };
    opener_ = std::make_unique<Relay>(x);
  }

  void TearDown() override {
    opener_.reset();
    RelayTest::TearDown();
  }

  std::unique_ptr<Stream> OpenThroughPeer(const std::shared_ptr<TestSink>& sink,
                                          uint16_t port = 7) {
    auto s = opener_->Open(kMachine, StreamTarget{kWorkload, port}, sink, "rnt_test");
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) return nullptr;
    sink->Bind(s->get());
    return std::move(*s);
  }

  std::string authorization_ = kPeerSecret;
  std::unique_ptr<Relay> opener_;
  Mutex mu_;
  int64_t metered_in_ GUARDED_BY(mu_) = 0;
  int64_t metered_out_ GUARDED_BY(mu_) = 0;
};

TEST_F(PeerRelayTest, BytesThroughTheHoldingInstanceGoToThePortAndBackExactly) {
  StartAgent();
  std::vector<std::shared_ptr<TestSink>> sinks;
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<std::string> sent;
  for (int i = 0; i < 3; ++i) {
    sinks.push_back(std::make_shared<TestSink>());
    streams.push_back(OpenThroughPeer(sinks.back()));
    ASSERT_NE(streams.back(), nullptr);
    sent.push_back(RandomBytes((4 << 20) + i, 40 + i));
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(sinks[i]->WriteAll(sent[i])) << i;
    ASSERT_TRUE(streams[i]->Finish().ok());
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(sinks[i]->WaitEnded()) << i;
    EXPECT_TRUE(sinks[i]->end()->clean) << i << ": " << sinks[i]->end()->reason;
    EXPECT_TRUE(sinks[i]->got() == sent[i]) << i << ": " << sinks[i]->got().size();
  }
  // One connection to the holding instance carried them all; it holds the agent, this
  // instance none.
  const RelayFigures x = opener_->Figures();
  EXPECT_EQ(x.peer_links, 1);
  EXPECT_EQ(x.channels, 0);
  EXPECT_EQ(relay_.Figures().channels, 1);
  EXPECT_FALSE(opener_->Connected(kMachine));
  // The opener meters its rental's bytes (the holding instance does not: its streams name
  // no rental).
  int64_t total = 0;
  for (const std::string& d : sent) total += static_cast<int64_t>(d.size());
  for (int i = 0; i < 100; ++i) {
    {
      MutexLock lock(&mu_);
      if (metered_in_ == total && metered_out_ == total) break;
    }
    std::this_thread::sleep_for(20ms);
  }
  MutexLock lock(&mu_);
  EXPECT_EQ(metered_in_, total);
  EXPECT_EQ(metered_out_, total);
}

TEST_F(PeerRelayTest, TheAgentsRefusalComesThroughTheHoldingInstance) {
  StartAgent();
  auto sink = std::make_shared<TestSink>();
  auto stream = OpenThroughPeer(sink, 9);
  ASSERT_NE(stream, nullptr);
  ASSERT_TRUE(sink->WaitEnded());
  EXPECT_TRUE(sink->end()->refused);
  EXPECT_EQ(sink->end()->code, mux::Code::kRefused);
  EXPECT_NE(sink->end()->reason.find("not declared"), std::string::npos) << sink->end()->reason;
}

TEST_F(PeerRelayTest, AnInstanceThatNoLongerHoldsTheAgentRefusesAndTheNextOpenWorks) {
  // The route names the holding instance, but the agent is not (or no longer) there.
  auto sink = std::make_shared<TestSink>();
  auto stream = OpenThroughPeer(sink);
  ASSERT_NE(stream, nullptr);
  ASSERT_TRUE(sink->WaitEnded());
  EXPECT_TRUE(sink->end()->refused);
  EXPECT_EQ(sink->end()->code, mux::Code::kShutdown);
  // It comes back there: the same link serves the next stream.
  StartAgent();
  auto again = std::make_shared<TestSink>();
  auto s2 = OpenThroughPeer(again);
  ASSERT_NE(s2, nullptr);
  ASSERT_TRUE(again->WriteAll("hello"));
  ASSERT_TRUE(s2->Finish().ok());
  ASSERT_TRUE(again->WaitEnded());
  EXPECT_TRUE(again->end()->clean) << again->end()->reason;
  EXPECT_EQ(again->got(), "hello");
  EXPECT_EQ(opener_->Figures().peer_links, 1);
}

TEST_F(PeerRelayTest, TheAgentLeavingTheHoldingInstanceEndsTheStreamsThroughIt) {
  StartAgent();
  auto sink = std::make_shared<TestSink>();
  auto stream = OpenThroughPeer(sink);
  ASSERT_NE(stream, nullptr);
  ASSERT_TRUE(sink->WriteAll("ping"));
  ASSERT_TRUE(sink->WaitBytes(4));
  StopAgent();
  ASSERT_TRUE(sink->WaitEnded());
  EXPECT_FALSE(sink->end()->clean);
  EXPECT_EQ(sink->end()->code, mux::Code::kShutdown) << sink->end()->reason;
}

TEST_F(PeerRelayTest, NoRouteOrWrongCredentialsOpenNothing) {
  StartAgent();
  auto sink = std::make_shared<TestSink>();
  auto none = opener_->Open("mch_elsewhere", StreamTarget{kWorkload, 7}, sink);
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable);
  authorization_ = "Bearer ins_test.wrong";
  auto refused = opener_->Open(kMachine, StreamTarget{kWorkload, 7}, sink);
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(opener_->Figures().peer_links, 0);
}

TEST(PeerOpenTest, AnOpenNamesTheMachineThenTheTarget) {
  const StreamTarget t{kWorkload, 8080};
  const std::string payload = EncodePeerOpen("mch_1", t);
  auto back = ParsePeerOpen(payload);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->machine_id, "mch_1");
  EXPECT_EQ(back->target, t);
  for (const std::string& bad : {std::string("no newline"), "\n" + EncodeStreamTarget(t),
                                 "mch 1\n" + EncodeStreamTarget(t), std::string("mch_1\n{}")}) {
    EXPECT_EQ(ParsePeerOpen(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace gpunex::platform::relay
