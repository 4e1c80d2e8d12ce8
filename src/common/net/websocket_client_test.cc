// WebSocketClient against a small blocking Beast WebSocket server and a minimal HTTP
// CONNECT proxy, both written here on 127.0.0.1 (the agent links no platform code).
#include "common/net/websocket_client.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/net/endpoint.h"
#include "common/testing/tls_files.h"
#include "common/thread_annotations.h"

namespace gpunex::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace websocket = boost::beast::websocket;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

constexpr char kPath[] = "/api/v1/agent/connect";

// Accepts connections on 127.0.0.1 and serves each on its own thread with `serve`. The
// destructor unblocks everything with shutdown(2) on the sockets still in use, then joins.
class Listener {
 public:
  using Serve = std::function<void(tcp::socket&)>;

  explicit Listener(Serve serve) : serve_(std::move(serve)), acceptor_(ioc_) {
    tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~Listener() { Stop(); }

  // Stops accepting, unblocks the connections and joins their threads. Idempotent.
  void Stop() {
    if (stopping_.exchange(true)) return;
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    accept_thread_.join();
    {
      MutexLock lock(&mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    std::vector<std::thread> threads;
    {
      MutexLock lock(&mu_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }

  uint16_t port() const { return port_; }
  bool stopping() const { return stopping_; }

  // A socket that the destructor must unblock. Untrack() it before closing it, so that
  // a reused descriptor number is never shut down.
  void Track(int fd) {
    MutexLock lock(&mu_);
    fds_.insert(fd);
  }
  void Untrack(int fd) {
    MutexLock lock(&mu_);
    fds_.erase(fd);
  }

 private:
  void AcceptLoop() {
    while (!stopping_) {
      tcp::socket socket(ioc_);
      error_code ec;
      acceptor_.accept(socket, ec);
      if (ec) {
        if (stopping_) return;
        continue;
      }
      // Tracked before its thread starts, so that the destructor cannot miss it.
      MutexLock lock(&mu_);
      fds_.insert(socket.native_handle());
      threads_.emplace_back([this, s = std::move(socket)]() mutable {
        serve_(s);
        Untrack(s.native_handle());
      });
    }
  }

  const Serve serve_;
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  Mutex mu_;
  std::set<int> fds_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
};

// The server's end of one WebSocket connection, over a plain or a TLS stream.
class ServerConn {
 public:
  virtual ~ServerConn() = default;
  virtual error_code Read(std::string* text) = 0;
  virtual error_code Write(const std::string& text, bool binary = false) = 0;
  virtual error_code Close(uint16_t code, const std::string& reason) = 0;
  virtual websocket::close_reason reason() const = 0;
  std::atomic<int> pings{0};
  const Listener* listener = nullptr;
};

template <typename WsStream>
class ServerConnImpl final : public ServerConn {
 public:
  explicit ServerConnImpl(WsStream& ws) : ws_(ws) {}
  error_code Read(std::string* text) override {
    beast::flat_buffer buffer;
    error_code ec;
    ws_.read(buffer, ec);
    if (!ec) *text = beast::buffers_to_string(buffer.data());
    return ec;
  }
  error_code Write(const std::string& text, bool binary) override {
    error_code ec;
    ws_.binary(binary);
    ws_.write(asio::buffer(text), ec);
    return ec;
  }
  error_code Close(uint16_t code, const std::string& reason) override {
    error_code ec;
    ws_.close(websocket::close_reason(static_cast<websocket::close_code>(code), reason), ec);
    return ec;
  }
  websocket::close_reason reason() const override { return ws_.reason(); }

 private:
  WsStream& ws_;
};

// Echoes text messages until the connection ends.
void Echo(ServerConn& conn) {
  std::string text;
  while (!conn.Read(&text)) {
    if (conn.Write(text)) return;
  }
}

using ::gpunex::testing::TlsFiles;

// A WebSocket server on ws:// (or wss:// with `tls`). The upgrade needs
// "Authorization: Bearer good"; "Bearer forbidden" gets 403, anything else 401, both with
// a JSON error body like the platform's. Accepted connections are served by `handler`.
class TestWsServer {
 public:
  using Handler = std::function<void(ServerConn&)>;

  explicit TestWsServer(Handler handler = Echo, const TlsFiles* tls = nullptr)
      : handler_(std::move(handler)) {
    if (tls != nullptr) {
      ssl_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
      ssl_->use_certificate_chain_file(tls->cert_path());
      ssl_->use_private_key_file(tls->key_path(), asio::ssl::context::pem);
    }
    listener_ = std::make_unique<Listener>([this](tcp::socket& socket) { Serve(socket); });
  }
  // Stops the listener (and so the handlers) before the members they use go.
  ~TestWsServer() { listener_->Stop(); }

  uint16_t port() const { return listener_->port(); }
  std::string Url(const std::string& scheme = "ws", const std::string& host = "127.0.0.1") const {
    return scheme + "://" + host + ":" + std::to_string(port()) + kPath;
  }
  // Headers of the last upgrade request, names lower-case.
  std::map<std::string, std::string> last_headers() {
    MutexLock lock(&mu_);
    return last_headers_;
  }
  int upgrades() {
    MutexLock lock(&mu_);
    return upgrades_;
  }

 private:
  void Serve(tcp::socket& socket) {
    if (ssl_ == nullptr) {
      ServeStream(socket);
      return;
    }
    asio::ssl::stream<tcp::socket&> tls(socket, *ssl_);
    error_code ec;
    tls.handshake(asio::ssl::stream_base::server, ec);
    if (!ec) ServeStream(tls);
  }

  template <typename Stream>
  void ServeStream(Stream& stream) {
    beast::flat_buffer buffer;
    bhttp::request<bhttp::string_body> req;
    error_code ec;
    bhttp::read(stream, buffer, req, ec);
    if (ec) return;
    {
      MutexLock lock(&mu_);
      last_headers_.clear();
      for (const auto& field : req) {
        std::string name(field.name_string());
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        last_headers_[name] = std::string(field.value());
      }
    }
    const std::string auth(req[bhttp::field::authorization]);
    if (auth != "Bearer good") {
      const bool forbidden = auth == "Bearer forbidden";
      bhttp::response<bhttp::string_body> res{
          forbidden ? bhttp::status::forbidden : bhttp::status::unauthorized, 11};
      res.set(bhttp::field::content_type, "application/json");
      res.body() =
          forbidden
              ? R"({"error":{"code":"permission_denied","message":"the machine is suspended"}})"
              : R"({"error":{"code":"unauthenticated","message":"the agent token is revoked"}})";
      res.prepare_payload();
      bhttp::write(stream, res, ec);
      return;
    }
    websocket::stream<Stream&> ws(stream);
    ws.read_message_max(64 << 20);
    ws.accept(req, ec);
    if (ec) return;
    {
      MutexLock lock(&mu_);
      ++upgrades_;
    }
    ServerConnImpl<websocket::stream<Stream&>> conn(ws);
    conn.listener = listener_.get();
    ws.control_callback([&conn](websocket::frame_type kind, beast::string_view) {
      if (kind == websocket::frame_type::ping) ++conn.pings;
    });
    handler_(conn);
  }

  const Handler handler_;
  std::unique_ptr<asio::ssl::context> ssl_;
  Mutex mu_;
  std::map<std::string, std::string> last_headers_ GUARDED_BY(mu_);
  int upgrades_ GUARDED_BY(mu_) = 0;
  std::unique_ptr<Listener> listener_;  // last: its threads use the above
};

// A minimal HTTP CONNECT proxy: checks Proxy-Authorization when `required_auth` is set
// (407 otherwise), connects to the requested host:port and relays bytes both ways.
class TestProxy {
 public:
  explicit TestProxy(std::string required_auth = "") : required_auth_(std::move(required_auth)) {
    listener_ = std::make_unique<Listener>([this](tcp::socket& socket) { Serve(socket); });
  }
  ~TestProxy() { listener_->Stop(); }

  uint16_t port() const { return listener_->port(); }
  std::string Url(const std::string& userinfo = "") const {
    return "http://" + (userinfo.empty() ? "" : userinfo + "@") +
           "127.0.0.1:" + std::to_string(port());
  }
  int tunnels() {
    MutexLock lock(&mu_);
    return tunnels_;
  }
  std::string last_target() {
    MutexLock lock(&mu_);
    return last_target_;
  }
  std::string last_auth() {
    MutexLock lock(&mu_);
    return last_auth_;
  }

 private:
  void Serve(tcp::socket& client) {
    beast::flat_buffer buffer;
    bhttp::request_parser<bhttp::empty_body> parser;
    error_code ec;
    bhttp::read_header(client, buffer, parser, ec);
    if (ec) return;
    const auto& req = parser.get();
    const std::string target(req.target());
    const std::string auth(req[bhttp::field::proxy_authorization]);
    {
      MutexLock lock(&mu_);
      last_target_ = target;
      last_auth_ = auth;
    }
    if (req.method() != bhttp::verb::connect) {
      asio::write(client,
                  asio::buffer(std::string("HTTP/1.1 405 Method Not Allowed\r\nContent-Length: "
                                           "0\r\n\r\n")),
                  ec);
      return;
    }
    if (!required_auth_.empty() && auth != required_auth_) {
      asio::write(client,
                  asio::buffer(std::string("HTTP/1.1 407 Proxy Authentication "
                                           "Required\r\nProxy-Authenticate: "
                                           "Basic\r\nContent-Length: 0\r\n\r\n")),
                  ec);
      return;
    }
    const size_t colon = target.rfind(':');
    tcp::socket upstream(client.get_executor());
    tcp::resolver resolver(client.get_executor());
    auto results = resolver.resolve(target.substr(0, colon), target.substr(colon + 1), ec);
    if (!ec) asio::connect(upstream, results, ec);
    if (ec) {
      asio::write(
          client,
          asio::buffer(std::string("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")), ec);
      return;
    }
    const int upstream_fd = upstream.native_handle();
    listener_->Track(upstream_fd);
    {
      MutexLock lock(&mu_);
      ++tunnels_;
    }
    asio::write(client, asio::buffer(std::string("HTTP/1.1 200 Connection established\r\n\r\n")),
                ec);
    if (!ec && buffer.size() > 0) asio::write(upstream, buffer.data(), ec);
    if (!ec) {
      std::thread up([&] { Pump(client, upstream); });
      Pump(upstream, client);
      up.join();
    }
    listener_->Untrack(upstream_fd);
  }

  // Copies from `from` to `to` until either fails, then shuts both down.
  static void Pump(tcp::socket& from, tcp::socket& to) {
    std::array<char, 16384> data;
    error_code ec;
    for (;;) {
      const size_t n = from.read_some(asio::buffer(data), ec);
      if (ec) break;
      asio::write(to, asio::buffer(data.data(), n), ec);
      if (ec) break;
    }
    ::shutdown(from.native_handle(), SHUT_RDWR);
    ::shutdown(to.native_handle(), SHUT_RDWR);
  }

  const std::string required_auth_;
  Mutex mu_;
  int tunnels_ GUARDED_BY(mu_) = 0;
  std::string last_target_ GUARDED_BY(mu_);
  std::string last_auth_ GUARDED_BY(mu_);
  std::unique_ptr<Listener> listener_;
};

WebSocketClientOptions Options(std::string token = "good") {
  WebSocketClientOptions options;
  options.connect_timeout = 5s;
  options.proxy_url = "";
  options.headers = {{"Authorization", "Bearer " + token}, {"X-Gpunex-Agent-Version", "0.1.0"}};
  return options;
}

std::unique_ptr<WebSocketClient> MustConnect(const std::string& url,
                                             WebSocketClientOptions options = Options()) {
  auto client = WebSocketClient::Connect(url, std::move(options));
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(*client) : nullptr;
}

// The next message within 5 s, or a description of what happened instead.
std::string ReceiveText(WebSocketClient& client) {
  auto got = client.Receive(5000ms);
  if (!got.ok()) return "<error: " + got.status().ToString() + ">";
  if (!got->has_value()) return "<timeout>";
  return **got;
}

// Keeps the environment variables it sets only for its lifetime.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = std::string(old);
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// None of the tests below may go through a proxy of the machine running them.
class WebSocketClientTest : public ::testing::Test {
 protected:
  ScopedEnv a_{"NO_PROXY", "*"};
};

TEST_F(WebSocketClientTest, ConnectsAndEchoes) {
  TestWsServer server;
  auto client = MustConnect(server.Url());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Send("hello").ok());
  ASSERT_TRUE(client->Send("{\"type\":\"hb\"}").ok());
  EXPECT_EQ(ReceiveText(*client), "hello");
  EXPECT_EQ(ReceiveText(*client), "{\"type\":\"hb\"}");
  auto nothing = client->Receive(50ms);
  ASSERT_TRUE(nothing.ok());
  EXPECT_FALSE(nothing->has_value());
  auto headers = server.last_headers();
  EXPECT_EQ(headers["authorization"], "Bearer good");
  EXPECT_EQ(headers["x-gpunex-agent-version"], "0.1.0");
  EXPECT_EQ(headers["user-agent"], "gpunex-agent");
  EXPECT_EQ(headers["host"], "127.0.0.1:" + std::to_string(server.port()));
  client->Close();
  client->Close();  // idempotent
  EXPECT_EQ(client->Send("late").code(), StatusCode::kUnavailable);
  auto closed = client->Receive(10ms);
  EXPECT_EQ(closed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(closed.status().message().find("closed by this side"), std::string::npos)
      << closed.status().message();

  // http:// means ws://.
  auto again = MustConnect("http://127.0.0.1:" + std::to_string(server.port()) + kPath);
  ASSERT_NE(again, nullptr);
  ASSERT_TRUE(again->Send("via http url").ok());
  EXPECT_EQ(ReceiveText(*again), "via http url");
}

TEST_F(WebSocketClientTest, RefusalsCarryStatusAndMessage) {
  TestWsServer server;
  auto revoked = WebSocketClient::Connect(server.Url(), Options("revoked"));
  EXPECT_EQ(revoked.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(revoked.status().message().find("the agent token is revoked"), std::string::npos)
      << revoked.status().message();
  EXPECT_NE(revoked.status().message().find("401"), std::string::npos);
  auto forbidden = WebSocketClient::Connect(server.Url(), Options("forbidden"));
  EXPECT_EQ(forbidden.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(forbidden.status().message().find("the machine is suspended"), std::string::npos);
  EXPECT_EQ(server.upgrades(), 0);
}

TEST_F(WebSocketClientTest, NetworkFailuresAreUnavailable) {
  uint16_t closed_port;
  {
    Listener gone([](tcp::socket&) {});
    closed_port = gone.port();
  }
  auto refused =
      WebSocketClient::Connect("ws://127.0.0.1:" + std::to_string(closed_port) + kPath, Options());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status().ToString();

  // A server that accepts and never answers: the connect timeout applies.
  Listener silent([](tcp::socket& socket) {
    char byte;
    error_code ec;
    while (!ec) socket.read_some(asio::buffer(&byte, 1), ec);
  });
  WebSocketClientOptions options = Options();
  options.connect_timeout = 1s;
  const auto start = std::chrono::steady_clock::now();
  auto timed_out =
      WebSocketClient::Connect("ws://127.0.0.1:" + std::to_string(silent.port()) + kPath, options);
  EXPECT_EQ(timed_out.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(timed_out.status().message().find("timed out"), std::string::npos)
      << timed_out.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);

  EXPECT_EQ(WebSocketClient::Connect("ftp://x", Options()).status().code(),
            StatusCode::kInvalidArgument);
  options = Options();
  options.headers.emplace_back("X-Bad", "a\r\nInjected: 1");
  EXPECT_EQ(WebSocketClient::Connect("ws://127.0.0.1:1/", options).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(WebSocketClientTest, OversizedIncomingMessageFailsTheConnection) {
  std::atomic<int> close_code{-1};
  TestWsServer server([&](ServerConn& conn) {
    conn.Write(std::string(1024, 'a'));
    conn.Write(std::string(1025, 'b'));
    std::string text;
    while (!conn.Read(&text)) {
    }
    close_code = conn.reason().code;
  });
  WebSocketClientOptions options = Options();
  options.max_message_bytes = 1024;
  auto client = MustConnect(server.Url(), options);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(ReceiveText(*client).size(), 1024u);
  auto failed = client->Receive(5000ms);
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.status().message().find("max_message_bytes"), std::string::npos)
      << failed.status().message();
  for (int i = 0; i < 100 && close_code.load() == -1; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(close_code.load(), 1009);
}

TEST_F(WebSocketClientTest, ConcurrentSendAndReceive) {
  TestWsServer server;
  auto client = MustConnect(server.Url());
  ASSERT_NE(client, nullptr);
  constexpr int kSenders = 3;
  constexpr int kPerSender = 400;
  std::vector<std::thread> senders;
  for (int s = 0; s < kSenders; ++s) {
    senders.emplace_back([&, s] {
      for (int i = 0; i < kPerSender; ++i) {
        Status sent = client->Send(std::to_string(s) + ":" + std::to_string(i));
        while (sent.code() == StatusCode::kResourceExhausted) {
          std::this_thread::sleep_for(1ms);
          sent = client->Send(std::to_string(s) + ":" + std::to_string(i));
        }
        EXPECT_TRUE(sent.ok()) << sent.ToString();
      }
    });
  }
  std::vector<int> next(kSenders, 0);
  int received = 0;
  bool in_order = true;
  while (received < kSenders * kPerSender) {
    auto got = client->Receive(5000ms);
    ASSERT_TRUE(got.ok() && got->has_value()) << received;
    const std::string& text = **got;
    const int s = std::stoi(text.substr(0, text.find(':')));
    const int i = std::stoi(text.substr(text.find(':') + 1));
    if (i != next[s]) in_order = false;
    next[s] = i + 1;
    ++received;
  }
  for (auto& t : senders) t.join();
  EXPECT_TRUE(in_order);
  // Close from another thread while this one waits in Receive.
  std::thread closer([&] {
    std::this_thread::sleep_for(100ms);
    client->Close(1000, "bye");
  });
  auto after = client->Receive(5000ms);
  closer.join();
  EXPECT_EQ(after.status().code(), StatusCode::kUnavailable);
}

TEST_F(WebSocketClientTest, ServerCloseEndsReceive) {
  TestWsServer server([](ServerConn& conn) {
    conn.Write("bye");
    conn.Close(1001, "going away");
  });
  auto client = MustConnect(server.Url());
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(ReceiveText(*client), "bye");
  auto closed = client->Receive(5000ms);
  EXPECT_EQ(closed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(closed.status().message().find("closed by the platform: 1001 going away"),
            std::string::npos)
      << closed.status().message();
  Status sent = client->Send("anyone?");
  EXPECT_EQ(sent.code(), StatusCode::kUnavailable);
  EXPECT_NE(sent.message().find("1001"), std::string::npos) << sent.message();
}

// Whether `efd` is signalled within `timeout` (it is reset when it is).
bool Signalled(int efd, std::chrono::milliseconds timeout) {
  pollfd p{efd, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
  uint64_t v = 0;
  return read(efd, &v, sizeof v) == sizeof v;
}

TEST_F(WebSocketClientTest, NotifyOnSignalsADrainedQueueAnArrivalAndTheClose) {
  TestWsServer server([](ServerConn& conn) {
    std::string text;
    while (!conn.Read(&text)) {
      if (text == "later") {
        std::this_thread::sleep_for(300ms);
        conn.Write("pushed");
      } else if (text == "bye") {
        conn.Close(1000, "done");
        return;
      }
    }
  });
  const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(efd, 0);
  {
    auto client = MustConnect(server.Url());
    ASSERT_NE(client, nullptr);
    client->NotifyOn(efd, 0, 0);
    EXPECT_FALSE(Signalled(efd, 50ms)) << "nothing happened yet";

    ASSERT_TRUE(client->Send("later").ok());
    EXPECT_TRUE(Signalled(efd, 5000ms)) << "the send queue drained";
    auto none = client->Receive(0ms);
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value());

    EXPECT_TRUE(Signalled(efd, 5000ms)) << "a message arrived";
    auto pushed = client->Receive(0ms);
    ASSERT_TRUE(pushed.ok());
    ASSERT_TRUE(pushed->has_value());
    EXPECT_EQ(**pushed, "pushed");

    ASSERT_TRUE(client->Send("bye").ok());
    bool closed = false;
    for (int i = 0; i < 3 && !closed; ++i) {
      ASSERT_TRUE(Signalled(efd, 5000ms)) << "the drain, then the close";
      closed = !client->Receive(0ms).ok();
    }
    EXPECT_TRUE(closed);
    client->NotifyOn(-1, 0, 0);
  }
  close(efd);
}

TEST_F(WebSocketClientTest, ClientCloseFlushesAndSendsItsCode) {
  std::promise<std::pair<std::vector<std::string>, int>> seen;
  TestWsServer server([&](ServerConn& conn) {
    std::vector<std::string> got;
    std::string text;
    while (!conn.Read(&text)) got.push_back(text);
    seen.set_value({got, conn.reason().code});
  });
  auto client = MustConnect(server.Url());
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(client->Send("m" + std::to_string(i)).ok());
  client->Close(4000, "agent stopping");
  auto future = seen.get_future();
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  auto [messages, code] = future.get();
  EXPECT_EQ(messages.size(), 50u);
  EXPECT_EQ(messages.back(), "m49");
  EXPECT_EQ(code, 4000);
}

TEST_F(WebSocketClientTest, PingsAndGivesUpOnASilentPlatform) {
  std::atomic<int> pings{0};
  TestWsServer reading([&](ServerConn& conn) {
    std::string text;
    while (!conn.Read(&text)) {
    }
    pings = conn.pings.load();
  });
  WebSocketClientOptions options = Options();
  options.ping_interval = 1s;
  {
    auto client = MustConnect(reading.Url(), options);
    ASSERT_NE(client, nullptr);
    // The server answers pings (Beast does, while reading): after four intervals the
    // connection is still up.
    auto nothing = client->Receive(4200ms);
    ASSERT_TRUE(nothing.ok()) << nothing.status().ToString();
    EXPECT_FALSE(nothing->has_value());
    EXPECT_TRUE(client->Send("still here").ok());
    client->Close();
  }
  for (int i = 0; i < 100 && pings.load() == 0; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_GE(pings.load(), 3);

  // This server neither reads nor writes, so the pings go unanswered.
  TestWsServer silent([](ServerConn& conn) {
    while (!conn.listener->stopping()) std::this_thread::sleep_for(20ms);
  });
  auto client = MustConnect(silent.Url(), options);
  ASSERT_NE(client, nullptr);
  const auto start = std::chrono::steady_clock::now();
  auto gone = client->Receive(8000ms);
  EXPECT_EQ(gone.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(gone.status().message().find("nothing received"), std::string::npos)
      << gone.status().message();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 2500ms);
}

TEST_F(WebSocketClientTest, BinaryFromThePlatformIsRefused) {
  std::atomic<int> close_code{-1};
  TestWsServer server([&](ServerConn& conn) {
    conn.Write(std::string("\x01\x02", 2), /*binary=*/true);
    std::string text;
    while (!conn.Read(&text)) {
    }
    close_code = conn.reason().code;
  });
  auto client = MustConnect(server.Url());
  ASSERT_NE(client, nullptr);
  auto failed = client->Receive(5000ms);
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  for (int i = 0; i < 100 && close_code.load() == -1; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(close_code.load(), 1003);
}

TEST_F(WebSocketClientTest, BinaryModeSendsBinaryAndRefusesText) {
  std::atomic<int> close_code{-1};
  std::atomic<bool> got_bytes{false};
  TestWsServer server([&](ServerConn& conn) {
    std::string bytes;
    if (conn.Read(&bytes)) return;
    got_bytes = bytes == std::string("\x00\xff", 2);
    conn.Write(bytes, /*binary=*/true);  // echoed as it came
    conn.Write("text");                  // not taken in binary mode
    std::string more;
    while (!conn.Read(&more)) {
    }
    close_code = conn.reason().code;
  });
  WebSocketClientOptions options = Options();
  options.binary = true;
  auto client = MustConnect(server.Url(), options);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->QueuedBytes(), 0u);
  ASSERT_TRUE(client->Send(std::string("\x00\xff", 2)).ok());
  EXPECT_EQ(ReceiveText(*client), std::string("\x00\xff", 2));
  EXPECT_TRUE(got_bytes.load());  // (not UTF-8: a text frame would have failed)
  auto failed = client->Receive(5000ms);
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  for (int i = 0; i < 100 && close_code.load() == -1; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(close_code.load(), 1003);
}

TEST_F(WebSocketClientTest, TlsWithCaFile) {
  TlsFiles files;
  ASSERT_TRUE(files.ok());
  TestWsServer server(Echo, &files);
  WebSocketClientOptions options = Options();
  options.ca_file = files.cert_path();
  for (const char* host : {"localhost", "127.0.0.1"}) {
    auto client = MustConnect(server.Url("wss", host), options);
    ASSERT_NE(client, nullptr) << host;
    ASSERT_TRUE(client->Send(std::string("secure ") + host).ok());
    EXPECT_EQ(ReceiveText(*client), std::string("secure ") + host);
  }
  // https:// means wss://.
  auto https = MustConnect(server.Url("https"), options);
  ASSERT_NE(https, nullptr);

  // Refusals are reported over TLS too.
  auto revoked = WebSocketClient::Connect(server.Url("wss"), [&] {
    WebSocketClientOptions o = Options("revoked");
    o.ca_file = files.cert_path();
    return o;
  }());
  EXPECT_EQ(revoked.status().code(), StatusCode::kUnauthenticated);

  // A certificate from another authority is refused...
  TlsFiles other;
  ASSERT_TRUE(other.ok());
  options.ca_file = other.cert_path();
  auto untrusted = WebSocketClient::Connect(server.Url("wss"), options);
  EXPECT_EQ(untrusted.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(untrusted.status().message().find("certificate verify failed"), std::string::npos)
      << untrusted.status().message();
  // ...unless verification is off.
  options.ca_file = "";
  options.insecure_skip_verify = true;
  auto insecure = MustConnect(server.Url("wss"), options);
  ASSERT_NE(insecure, nullptr);
  ASSERT_TRUE(insecure->Send("unverified").ok());
  EXPECT_EQ(ReceiveText(*insecure), "unverified");

  options.insecure_skip_verify = false;
  options.ca_file = "/nonexistent/ca.pem";
  EXPECT_EQ(WebSocketClient::Connect(server.Url("wss"), options).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(WebSocketClientTest, ThroughConnectProxy) {
  const std::string expected_auth = "Basic " + Base64Encode("agent:p@ss word");
  TestProxy proxy(expected_auth);
  TestWsServer server;
  WebSocketClientOptions options = Options();
  options.proxy_url = proxy.Url("agent:p%40ss%20word");
  auto client = MustConnect(server.Url(), options);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Send("tunnelled").ok());
  EXPECT_EQ(ReceiveText(*client), "tunnelled");
  EXPECT_EQ(proxy.tunnels(), 1);
  EXPECT_EQ(proxy.last_target(), "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(proxy.last_auth(), expected_auth);
  // The Host header names the platform, not the proxy.
  EXPECT_EQ(server.last_headers()["host"], "127.0.0.1:" + std::to_string(server.port()));

  options.proxy_url = proxy.Url("agent:wrong");
  auto refused = WebSocketClient::Connect(server.Url(), options);
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("407"), std::string::npos)
      << refused.status().message();
}

TEST_F(WebSocketClientTest, TlsThroughConnectProxy) {
  TlsFiles files;
  ASSERT_TRUE(files.ok());
  TestProxy proxy;
  TestWsServer server(Echo, &files);
  WebSocketClientOptions options = Options();
  options.ca_file = files.cert_path();
  options.proxy_url = proxy.Url();
  auto client = MustConnect(server.Url("wss", "localhost"), options);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Send("tls in a tunnel").ok());
  EXPECT_EQ(ReceiveText(*client), "tls in a tunnel");
  EXPECT_EQ(proxy.last_target(), "localhost:" + std::to_string(server.port()));
  EXPECT_EQ(proxy.last_auth(), "");
}

TEST_F(WebSocketClientTest, ProxyFromTheEnvironment) {
  TestProxy proxy;
  TestWsServer server;
  ScopedEnv http_proxy("HTTP_PROXY", proxy.Url().c_str());
  {
    ScopedEnv no_proxy("NO_PROXY", "example.com");
    auto client = MustConnect(server.Url());
    ASSERT_NE(client, nullptr);
    EXPECT_EQ(proxy.tunnels(), 1);
  }
  {
    ScopedEnv no_proxy("NO_PROXY", "localhost,127.0.0.0/8");
    auto client = MustConnect(server.Url());
    ASSERT_NE(client, nullptr);
    EXPECT_EQ(proxy.tunnels(), 1);  // direct
  }
}

}  // namespace
}  // namespace gpunex::net
