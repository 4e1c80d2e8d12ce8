// WebSocket routes of the Server, exercised over loopback sockets with a Beast client.
#include "platform/http/websocket.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/tls_files.h"
#include "common/thread_annotations.h"
#include "platform/http/server.h"
#include "platform/http/testing/test_server.h"

namespace gpunex::platform::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace websocket = boost::beast::websocket;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

constexpr char kPath[] = "/api/v1/agent/connect";

using testing::NotFoundHandler;
using testing::TestOptions;
using testing::TestServer;

// What the sessions of a test saw, shared with the test body.
struct Probe {
  Mutex mu;
  CondVar cv;
  std::vector<std::string> messages GUARDED_BY(mu);
  std::vector<std::shared_ptr<WebSocketConnection>> accepted GUARDED_BY(mu);
  int closes GUARDED_BY(mu) = 0;
  std::atomic<int> in_message{0};
  std::atomic<bool> overlapped{false};
  std::atomic<bool> close_before_message_end{false};
  std::atomic<int> writables{0};

  // Waits until `n` sessions have been closed; false after `timeout`.
  bool WaitForCloses(int n, std::chrono::milliseconds timeout = 10s) EXCLUDES(mu) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    MutexLock lock(&mu);
    while (closes != n) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) return false;
      cv.WaitFor(&mu, left);
    }
    return true;
  }
  // Waits until `n` messages have been recorded; false after `timeout`.
  bool WaitForMessages(size_t n, std::chrono::milliseconds timeout = 10s) EXCLUDES(mu) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    MutexLock lock(&mu);
    while (messages.size() < n) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) return false;
      cv.WaitFor(&mu, left);
    }
    return true;
  }
  int Closes() EXCLUDES(mu) {
    MutexLock lock(&mu);
    return closes;
  }
};

// Echoes each message, except a few commands: "close" (the server closes with 4000),
// "throw" (OnMessage throws), "slow" (OnMessage sleeps).
class EchoSession final : public WebSocketSession {
 public:
  EchoSession(std::shared_ptr<WebSocketConnection> conn, std::shared_ptr<Probe> probe, bool echo)
      : conn_(std::move(conn)), probe_(std::move(probe)), echo_(echo) {}

  void OnMessage(std::string text) override {
    if (probe_->in_message.fetch_add(1) != 0) probe_->overlapped = true;
    if (text == "slow") std::this_thread::sleep_for(20ms);
    {
      MutexLock lock(&probe_->mu);
      probe_->messages.push_back(text);
    }
    probe_->cv.SignalAll();
    if (text == "throw") {
      probe_->in_message.fetch_sub(1);
      throw std::runtime_error("boom");
    }
    if (text == "close") {
      conn_->Send("closing");
      conn_->Close(4000, "asked to close");
    } else if (echo_) {
      conn_->Send(std::move(text));
    }
    probe_->in_message.fetch_sub(1);
  }

  void OnClose() override {
    if (probe_->in_message.load() != 0) probe_->close_before_message_end = true;
    {
      MutexLock lock(&probe_->mu);
      ++probe_->closes;
    }
    probe_->cv.SignalAll();
  }

 private:
  const std::shared_ptr<WebSocketConnection> conn_;
  const std::shared_ptr<Probe> probe_;
  const bool echo_;
};

// Accepts "Authorization: Bearer good", refuses anything else with 401.
WebSocketAcceptor EchoAcceptor(std::shared_ptr<Probe> probe, bool echo = true) {
  return [probe, echo](const Request& req, std::shared_ptr<WebSocketConnection> conn)
             -> StatusOr<std::shared_ptr<WebSocketSession>> {
    if (req.Header("authorization") != "Bearer good") {
      return Unauthenticated("the agent token is not valid");
    }
    {
      MutexLock lock(&probe->mu);
      probe->accepted.push_back(conn);
    }
    probe->cv.SignalAll();
    return std::shared_ptr<WebSocketSession>(std::make_shared<EchoSession>(conn, probe, echo));
  };
}

ServerOptions WsOptions(std::shared_ptr<Probe> probe, bool echo = true) {
  ServerOptions options = TestOptions();
  options.websocket_routes[kPath] = EchoAcceptor(std::move(probe), echo);
  return options;
}

// A synchronous WebSocket client. Every operation has a timeout (which, expiring, closes
// the socket), so a misbehaving server fails the test instead of hanging it.
template <typename Next>
class BasicWsClient {
 public:
  template <typename Start>
  error_code Run(Start start, std::chrono::steady_clock::duration timeout = 10s) {
    error_code result = asio::error::would_block;
    beast::get_lowest_layer(*ws_).expires_after(timeout);
    start([&result](error_code ec, auto&&...) { result = ec; });
    ioc_.restart();
    ioc_.run();
    return result;
  }

  error_code Connect(uint16_t port) {
    tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
    return Run(
        [&](auto handler) { beast::get_lowest_layer(*ws_).async_connect(endpoint, handler); });
  }

  // The WebSocket handshake; `res` receives the server's answer (the 101, or a refusal).
  error_code Handshake(std::string target = kPath, std::string token = "good",
                       websocket::response_type* res = nullptr) {
    ws_->set_option(websocket::stream_base::decorator([token](websocket::request_type& req) {
      if (!token.empty()) req.set(bhttp::field::authorization, "Bearer " + token);
    }));
    websocket::response_type ignored;
    websocket::response_type& out = res != nullptr ? *res : ignored;
    return Run([&](auto handler) { ws_->async_handshake(out, "localhost", target, handler); });
  }

  error_code Write(const std::string& text, bool binary = false) {
    ws_->binary(binary);
    return Run([&](auto handler) { ws_->async_write(asio::buffer(text), handler); });
  }

  error_code Read(std::string* text, std::chrono::steady_clock::duration timeout = 10s) {
    beast::flat_buffer buffer;
    error_code ec = Run([&](auto handler) { ws_->async_read(buffer, handler); }, timeout);
    if (!ec) *text = beast::buffers_to_string(buffer.data());
    return ec;
  }

  // Reads until the connection closes; returns the messages read before.
  std::vector<std::string> ReadUntilClosed(error_code* final_ec) {
    std::vector<std::string> out;
    for (;;) {
      std::string text;
      error_code ec = Read(&text);
      if (ec) {
        *final_ec = ec;
        return out;
      }
      out.push_back(std::move(text));
    }
  }

  error_code Close(websocket::close_code code = websocket::close_code::normal) {
    return Run([&](auto handler) { ws_->async_close(code, handler); });
  }

  const websocket::close_reason& reason() const { return ws_->reason(); }
  websocket::stream<Next>& ws() { return *ws_; }

 protected:
  asio::io_context ioc_;
  std::optional<websocket::stream<Next>> ws_;
};

class WsClient : public BasicWsClient<beast::tcp_stream> {
 public:
  WsClient() {
    ws_.emplace(ioc_);
    ws_->read_message_max(64 << 20);
  }
  // Connects and completes the handshake; fails the test otherwise.
  explicit WsClient(uint16_t port) : WsClient() {
    error_code ec = Connect(port);
    EXPECT_FALSE(ec) << ec.message();
    if (!ec) ec = Handshake();
    EXPECT_FALSE(ec) << ec.message();
  }
};

// One plain HTTP exchange on a fresh connection.
bhttp::response<bhttp::string_body> HttpExchange(uint16_t port,
                                                 bhttp::request<bhttp::string_body> req) {
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.expires_after(10s);
  bhttp::response<bhttp::string_body> res;
  beast::flat_buffer buffer;
  stream.async_connect(
      tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), [&](error_code ec) {
        EXPECT_FALSE(ec) << ec.message();
        if (ec) return;
        req.prepare_payload();
        bhttp::async_write(stream, req, [&](error_code wec, size_t) {
          EXPECT_FALSE(wec) << wec.message();
          if (wec) return;
          bhttp::async_read(stream, buffer, res,
                            [](error_code rec, size_t) { EXPECT_FALSE(rec) << rec.message(); });
        });
      });
  ioc.run();
  return res;
}

std::string ErrorField(const std::string& body, const char* field) {
  auto parsed = ParseJson(body);
  if (!parsed.ok() || !parsed->is_object() || !parsed->as_object().contains("error")) {
    return "<no error body: " + body + ">";
  }
  return std::string(parsed->at("error").at(field).as_string());
}

TEST(WebSocket, EchoesAndReportsClose) {
  auto probe = std::make_shared<Probe>();
  TestServer ts(WsOptions(probe));
  WsClient client(ts.port());
  ASSERT_FALSE(client.Write("hello"));
  std::string reply;
  ASSERT_FALSE(client.Read(&reply));
  EXPECT_EQ(reply, "hello");
  ASSERT_FALSE(client.Write("{\"type\":\"x\"}"));
  ASSERT_FALSE(client.Read(&reply));
  EXPECT_EQ(reply, "{\"type\":\"x\"}");
  {
    MutexLock lock(&probe->mu);
    ASSERT_EQ(probe->accepted.size(), 1u);
    EXPECT_EQ(probe->accepted[0]->RemoteAddr(), "127.0.0.1");
  }
  EXPECT_FALSE(client.Close());
  EXPECT_TRUE(probe->WaitForCloses(1));
  // The connection outlives its session harmlessly.
  std::shared_ptr<WebSocketConnection> conn;
  {
    MutexLock lock(&probe->mu);
    conn = probe->accepted[0];
  }
  EXPECT_FALSE(conn->Send("too late"));
  conn->Close(1000, "");
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(probe->Closes(), 1);
}

TEST(WebSocket, RefusedUpgradeGetsJsonErrorAndNoSession) {
  auto probe = std::make_shared<Probe>();
  TestServer ts(WsOptions(probe));
  {
    WsClient client;
    ASSERT_FALSE(client.Connect(ts.port()));
    websocket::response_type res;
    error_code ec = client.Handshake(kPath, "revoked", &res);
    EXPECT_EQ(ec, websocket::error::upgrade_declined);
    EXPECT_EQ(res.result_int(), 401);
    EXPECT_EQ(res[bhttp::field::www_authenticate], "Bearer");
    EXPECT_EQ(ErrorField(res.body(), "code"), "unauthenticated");
    EXPECT_EQ(ErrorField(res.body(), "message"), "the agent token is not valid");
  }
  {
    WsClient client;
    ASSERT_FALSE(client.Connect(ts.port()));
    websocket::response_type res;
    EXPECT_EQ(client.Handshake(kPath, "", &res), websocket::error::upgrade_declined);
    EXPECT_EQ(res.result_int(), 401);
  }
  std::this_thread::sleep_for(50ms);
  MutexLock lock(&probe->mu);
  EXPECT_TRUE(probe->accepted.empty());
  EXPECT_EQ(probe->closes, 0);
}

TEST(WebSocket, AcceptorFailuresAre500) {
  ServerOptions options = TestOptions();
  options.websocket_routes["/throws"] = [](const Request&, std::shared_ptr<WebSocketConnection>)
      -> StatusOr<std::shared_ptr<WebSocketSession>> { throw std::runtime_error("secret detail"); };
  options.websocket_routes["/null"] =
      [](const Request&,
         std::shared_ptr<WebSocketConnection>) -> StatusOr<std::shared_ptr<WebSocketSession>> {
    return std::shared_ptr<WebSocketSession>();
  };
  TestServer ts(options);
  for (const char* path : {"/throws", "/null"}) {
    WsClient client;
    ASSERT_FALSE(client.Connect(ts.port()));
    websocket::response_type res;
    EXPECT_EQ(client.Handshake(path, "good", &res), websocket::error::upgrade_declined) << path;
    EXPECT_EQ(res.result_int(), 500) << path;
    EXPECT_EQ(res.body().find("secret"), std::string::npos);
  }
}

TEST(WebSocket, PlainRequestsAndOtherPaths) {
  auto probe = std::make_shared<Probe>();
  TestServer ts(WsOptions(probe));
  // A plain GET on the WebSocket route: 426.
  bhttp::request<bhttp::string_body> get{bhttp::verb::get, kPath, 11};
  get.set(bhttp::field::host, "localhost");
  get.set(bhttp::field::authorization, "Bearer good");
  auto res = HttpExchange(ts.port(), get);
  EXPECT_EQ(res.result_int(), 426);
  EXPECT_EQ(res[bhttp::field::upgrade], "websocket");
  EXPECT_EQ(ErrorField(res.body(), "code"), "upgrade_required");
  // An upgrade on another path goes to the handler.
  WsClient client;
  ASSERT_FALSE(client.Connect(ts.port()));
  websocket::response_type declined;
  EXPECT_EQ(client.Handshake("/api/v1/other", "good", &declined),
            websocket::error::upgrade_declined);
  EXPECT_EQ(declined.result_int(), 404);
  EXPECT_EQ(ErrorField(declined.body(), "code"), "not_found");
  MutexLock lock(&probe->mu);
  EXPECT_TRUE(probe->accepted.empty());
}

TEST(WebSocket, OversizedMessageCloses1009) {
  auto probe = std::make_shared<Probe>();
  ServerOptions options = WsOptions(probe);
  options.ws_max_message_bytes = 1024;
  TestServer ts(options);
  WsClient client(ts.port());
  ASSERT_FALSE(client.Write(std::string(1024, 'a')));  // at the limit: fine
  std::string reply;
  ASSERT_FALSE(client.Read(&reply));
  EXPECT_EQ(reply.size(), 1024u);
  ASSERT_FALSE(client.Write(std::string(1025, 'b')));
  EXPECT_EQ(client.Read(&reply), websocket::error::closed);
  EXPECT_EQ(client.reason().code, websocket::close_code::too_big);
  EXPECT_TRUE(probe->WaitForCloses(1));
  MutexLock lock(&probe->mu);
  EXPECT_EQ(probe->messages.size(), 1u);
}

TEST(WebSocket, BinaryMessageCloses1003) {
  auto probe = std::make_shared<Probe>();
  TestServer ts(WsOptions(probe));
  WsClient client(ts.port());
  ASSERT_FALSE(client.Write("\x01\x02", /*binary=*/true));
  std::string reply;
  EXPECT_EQ(client.Read(&reply), websocket::error::closed);
  EXPECT_EQ(client.reason().code, websocket::close_code::unknown_data);
  EXPECT_TRUE(probe->WaitForCloses(1));
  MutexLock lock(&probe->mu);
  EXPECT_TRUE(probe->messages.empty());
}

// Takes binary messages and echoes each message as it came (binary as binary), except
// the text "pause", after which it stops reading until the test resumes it; counts
// OnWritable calls.
class BinarySession final : public WebSocketSession {
 public:
  BinarySession(std::shared_ptr<WebSocketConnection> conn, std::shared_ptr<Probe> probe)
      : conn_(std::move(conn)), probe_(std::move(probe)) {}

  bool AcceptsBinary() const override { return true; }
  void OnMessage(std::string text) override {
    Record(text);
    if (text == "pause") {
      conn_->PauseReading(true);
    } else {
      conn_->Send(std::move(text));
    }
  }
  void OnBinary(std::string bytes) override {
    Record("binary:" + bytes);
    conn_->SendBinary(std::move(bytes));
  }
  void OnWritable() override {
    probe_->writables.fetch_add(1);
    probe_->cv.SignalAll();
  }
  void OnClose() override {
    {
      MutexLock lock(&probe_->mu);
      ++probe_->closes;
    }
    probe_->cv.SignalAll();
  }

 private:
  void Record(std::string what) {
    {
      MutexLock lock(&probe_->mu);
      probe_->messages.push_back(std::move(what));
    }
    probe_->cv.SignalAll();
  }

  const std::shared_ptr<WebSocketConnection> conn_;
  const std::shared_ptr<Probe> probe_;
};

ServerOptions BinaryOptions(std::shared_ptr<Probe> probe) {
  ServerOptions options = TestOptions();
  options.websocket_routes[kPath] = [probe](const Request&,
                                            std::shared_ptr<WebSocketConnection> conn)
      -> StatusOr<std::shared_ptr<WebSocketSession>> {
    {
      MutexLock lock(&probe->mu);
      probe->accepted.push_back(conn);
    }
    return std::shared_ptr<WebSocketSession>(std::make_shared<BinarySession>(conn, probe));
  };
  return options;
}

std::shared_ptr<WebSocketConnection> OnlyConnection(Probe& probe) {
  MutexLock lock(&probe.mu);
  return probe.accepted.size() == 1 ? probe.accepted[0] : nullptr;
}

TEST(WebSocket, SessionThatTakesBinaryGetsBinaryAndSendsBinary) {
  auto probe = std::make_shared<Probe>();
  TestServer ts(BinaryOptions(probe));
  WsClient client(ts.port());
  const std::string bytes("\x00\x01\xff\x80", 4);
  ASSERT_FALSE(client.Write(bytes, /*binary=*/true));
  std::string reply;
  ASSERT_FALSE(client.Read(&reply));
  EXPECT_EQ(reply, bytes);
  EXPECT_TRUE(client.ws().got_binary());
  ASSERT_FALSE(client.Write("text"));
  ASSERT_FALSE(client.Read(&reply));
  EXPECT_EQ(reply, "text");
  EXPECT_TRUE(client.ws().got_text());
  EXPECT_FALSE(client.Close());
  EXPECT_TRUE(probe->WaitForCloses(1));
  MutexLock lock(&probe->mu);
  EXPECT_EQ(probe->messages, (std::vector<std::string>{"binary:" + bytes, "text"}));
}

TEST(WebSocket, PausedReadingHoldsMessagesUntilResumed) {
  auto probe = std::make_shared<Probe>();
  TestServer ts(BinaryOptions(probe));
  WsClient client(ts.port());
  ASSERT_FALSE(client.Write("pause"));
  ASSERT_TRUE(probe->WaitForMessages(1));
  for (int i = 0; i < 5; ++i) ASSERT_FALSE(client.Write(std::to_string(i)));
  std::this_thread::sleep_for(300ms);
  {
    MutexLock lock(&probe->mu);
    EXPECT_EQ(probe->messages, std::vector<std::string>{"pause"});  // nothing more yet
  }
  auto conn = OnlyConnection(*probe);
  ASSERT_NE(conn, nullptr);
  conn->PauseReading(false);
  ASSERT_TRUE(probe->WaitForMessages(6));
  for (int i = 0; i < 5; ++i) {
    std::string reply;
    ASSERT_FALSE(client.Read(&reply));
    EXPECT_EQ(reply, std::to_string(i));
  }
  EXPECT_FALSE(client.Close());
  EXPECT_TRUE(probe->WaitForCloses(1));
}

TEST(WebSocket, NotifyWhenWritableWaitsUntilTheQueueDrains) {
  auto probe = std::make_shared<Probe>();
  TestServer ts(BinaryOptions(probe));
  WsClient client(ts.port());
  auto conn = OnlyConnection(*probe);
  ASSERT_NE(conn, nullptr);
  // The client reads nothing: once the socket buffers are full the queue grows.
  const std::string chunk(64 * 1024, 'x');
  int sent = 0;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (conn->QueuedBytes() < (size_t{2} << 20) && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(conn->SendBinary(chunk));
    ++sent;
    if (conn->QueuedBytes() < (size_t{1} << 20)) std::this_thread::sleep_for(1ms);
  }
  ASSERT_GE(conn->QueuedBytes(), size_t{2} << 20);
  EXPECT_FALSE(conn->Writable());
  conn->NotifyWhenWritable();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(probe->writables.load(), 0);
  for (int i = 0; i < sent; ++i) {
    std::string got;
    ASSERT_FALSE(client.Read(&got)) << i;
    ASSERT_EQ(got.size(), chunk.size());
  }
  MutexLock lock(&probe->mu);
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (probe->writables.load() == 0 && std::chrono::steady_clock::now() < until) {
    probe->cv.WaitFor(&probe->mu, 100ms);
  }
  EXPECT_EQ(probe->writables.load(), 1);
  EXPECT_LE(conn->QueuedBytes(), kWebSocketWritableBytes);
  EXPECT_TRUE(conn->Writable());
}

TEST(WebSocket, PatternRoutesBindTheirParameters) {
  auto probe = std::make_shared<Probe>();
  ServerOptions options = TestOptions();
  options.websocket_routes["/r/{id}/ports/{port}/connect"] =
      [probe](const Request& req, std::shared_ptr<WebSocketConnection> conn)
      -> StatusOr<std::shared_ptr<WebSocketSession>> {
    conn->Send(req.Param("id") + ":" + req.Param("port") + ":" + req.route);
    return std::shared_ptr<WebSocketSession>(std::make_shared<EchoSession>(conn, probe, true));
  };
  TestServer ts(options);
  WsClient client;
  ASSERT_FALSE(client.Connect(ts.port()));
  ASSERT_FALSE(client.Handshake("/r/rnt_1/ports/8080/connect"));
  std::string got;
  ASSERT_FALSE(client.Read(&got));
  EXPECT_EQ(got, "rnt_1:8080:/r/{id}/ports/{port}/connect");
  EXPECT_FALSE(client.Close());
  // Another shape is no WebSocket route: the handler answers (404).
  WsClient other;
  ASSERT_FALSE(other.Connect(ts.port()));
  websocket::response_type res;
  EXPECT_TRUE(other.Handshake("/r/rnt_1/ports/connect", "good", &res));
  EXPECT_EQ(res.result_int(), 404);
}

TEST(WebSocket, ManyMessagesArriveInOrderOneAtATime) {
  auto probe = std::make_shared<Probe>();
  ServerOptions options = WsOptions(probe);
  options.worker_threads = 8;
  TestServer ts(options);
  WsClient client(ts.port());
  constexpr int kMessages = 500;
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_FALSE(client.Write(i % 50 == 0 ? "slow" : std::to_string(i)));
  }
  for (int i = 0; i < kMessages; ++i) {
    std::string reply;
    ASSERT_FALSE(client.Read(&reply)) << i;
    EXPECT_EQ(reply, i % 50 == 0 ? "slow" : std::to_string(i));
  }
  EXPECT_FALSE(probe->overlapped.load());
  EXPECT_FALSE(client.Close());
  EXPECT_TRUE(probe->WaitForCloses(1));
  EXPECT_FALSE(probe->close_before_message_end.load());
}

TEST(WebSocket, ServerSendsFromAnotherThread) {
  auto probe = std::make_shared<Probe>();
  TestServer ts(WsOptions(probe, /*echo=*/false));
  WsClient client(ts.port());
  std::shared_ptr<WebSocketConnection> conn;
  {
    MutexLock lock(&probe->mu);
    ASSERT_EQ(probe->accepted.size(), 1u);
    conn = probe->accepted[0];
  }
  constexpr int kMessages = 200;
  std::thread pusher([&] {
    for (int i = 0; i < kMessages; ++i) EXPECT_TRUE(conn->Send("push-" + std::to_string(i)));
  });
  for (int i = 0; i < kMessages; ++i) {
    std::string text;
    ASSERT_FALSE(client.Read(&text));
    EXPECT_EQ(text, "push-" + std::to_string(i));
  }
  pusher.join();
  // The application closes: queued messages go first, then the close frame.
  ASSERT_TRUE(conn->Send("last"));
  conn->Close(4001, "done here");
  EXPECT_FALSE(conn->Send("after close"));
  std::string text;
  ASSERT_FALSE(client.Read(&text));
  EXPECT_EQ(text, "last");
  EXPECT_EQ(client.Read(&text), websocket::error::closed);
  EXPECT_EQ(client.reason().code, 4001);
  EXPECT_EQ(std::string(client.reason().reason.c_str()), "done here");
  EXPECT_TRUE(probe->WaitForCloses(1));
}

TEST(WebSocket, MessagesSentByTheAcceptorGoFirst) {
  auto probe = std::make_shared<Probe>();
  ServerOptions options = TestOptions();
  WebSocketAcceptor echo = EchoAcceptor(probe);
  options.websocket_routes[kPath] = [echo](const Request& req,
                                           std::shared_ptr<WebSocketConnection> conn) {
    EXPECT_TRUE(conn->Send("welcome"));
    return echo(req, conn);
  };
  TestServer ts(options);
  WsClient client(ts.port());
  ASSERT_FALSE(client.Write("ping"));
  std::string text;
  ASSERT_FALSE(client.Read(&text));
  EXPECT_EQ(text, "welcome");
  ASSERT_FALSE(client.Read(&text));
  EXPECT_EQ(text, "ping");
}

TEST(WebSocket, SessionCloseAndThrowingHandler) {
  auto probe = std::make_shared<Probe>();
  TestServer ts(WsOptions(probe));
  {
    WsClient client(ts.port());
    ASSERT_FALSE(client.Write("close"));
    std::string text;
    ASSERT_FALSE(client.Read(&text));
    EXPECT_EQ(text, "closing");
    EXPECT_EQ(client.Read(&text), websocket::error::closed);
    EXPECT_EQ(client.reason().code, 4000);
  }
  {
    WsClient client(ts.port());
    ASSERT_FALSE(client.Write("throw"));
    std::string text;
    EXPECT_EQ(client.Read(&text), websocket::error::closed);
    EXPECT_EQ(client.reason().code, websocket::close_code::internal_error);
  }
  EXPECT_TRUE(probe->WaitForCloses(2));
}

TEST(WebSocket, FiftyConcurrentConnections) {
  auto probe = std::make_shared<Probe>();
  ServerOptions options = WsOptions(probe);
  options.worker_threads = 4;
  TestServer ts(options);
  constexpr int kClients = 50;
  constexpr int kMessages = 20;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      WsClient client(ts.port());
      for (int i = 0; i < kMessages; ++i) {
        const std::string text = std::to_string(c) + ":" + std::to_string(i);
        if (client.Write(text)) return;
        std::string reply;
        if (client.Read(&reply) || reply != text) return;
      }
      if (!client.Close()) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kClients);
  EXPECT_TRUE(probe->WaitForCloses(kClients));
}

TEST(WebSocket, ShutdownClosesWithGoingAway) {
  auto probe = std::make_shared<Probe>();
  TestServer ts(WsOptions(probe));
  constexpr int kClients = 3;
  std::vector<std::unique_ptr<WsClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<WsClient>(ts.port()));
    ASSERT_FALSE(clients.back()->Write("hi"));
    std::string reply;
    ASSERT_FALSE(clients.back()->Read(&reply));
  }
  std::thread stopper([&] { ts.server().Shutdown(); });
  for (auto& client : clients) {
    std::string text;
    EXPECT_EQ(client->Read(&text), websocket::error::closed);
    EXPECT_EQ(client->reason().code, websocket::close_code::going_away);
    EXPECT_EQ(std::string(client->reason().reason.c_str()), "going away");
  }
  stopper.join();
  EXPECT_TRUE(ts.WaitForRun(5s));
  EXPECT_EQ(probe->Closes(), kClients);  // before Run() returned
}

TEST(WebSocket, SlowReaderIsClosedWith1008AndMemoryStaysBounded) {
  auto probe = std::make_shared<Probe>();
  TestServer ts(WsOptions(probe, /*echo=*/false));
  WsClient client(ts.port());
  std::shared_ptr<WebSocketConnection> conn;
  {
    MutexLock lock(&probe->mu);
    ASSERT_EQ(probe->accepted.size(), 1u);
    conn = probe->accepted[0];
  }
  // The client reads nothing while the server floods it.
  const std::string chunk(64 * 1024, 'x');
  size_t accepted = 0;
  for (int i = 0; i < 10000 && conn->Send(chunk); ++i) ++accepted;
  // What was accepted fits in the socket buffers plus the 4 MiB queue.
  EXPECT_LT(accepted * chunk.size(), size_t{48} << 20);
  EXPECT_GE(accepted * chunk.size(), size_t{4} << 20);
  EXPECT_FALSE(conn->Send("more"));
  error_code ec;
  std::vector<std::string> got = client.ReadUntilClosed(&ec);
  EXPECT_EQ(ec, websocket::error::closed) << ec.message();
  EXPECT_EQ(client.reason().code, websocket::close_code::policy_error);
  EXPECT_LT(got.size(), accepted);  // the queued rest was dropped
  EXPECT_TRUE(probe->WaitForCloses(1));
}

TEST(WebSocket, IdlePeerIsDroppedAndPongsKeepAlive) {
  auto probe = std::make_shared<Probe>();
  ServerOptions options = WsOptions(probe, /*echo=*/false);
  options.ws_ping_interval = 1s;
  TestServer ts(options);
  {
    // Reading all along, the client answers the server's pings: still open after more
    // than three intervals.
    WsClient client(ts.port());
    std::shared_ptr<WebSocketConnection> conn;
    {
      MutexLock lock(&probe->mu);
      conn = probe->accepted.back();
    }
    std::thread later([conn] {
      std::this_thread::sleep_for(4500ms);
      conn->Send("still here");
    });
    std::string text;
    error_code ec = client.Read(&text, 8s);
    later.join();
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(text, "still here");
    EXPECT_EQ(probe->Closes(), 0);
  }
  EXPECT_TRUE(probe->WaitForCloses(1));
  {
    // A client that neither reads nor sends is dropped after three intervals.
    WsClient client(ts.port());
    auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(probe->WaitForCloses(2, 8s));
    EXPECT_GE(std::chrono::steady_clock::now() - start, 2500ms);
  }
}

TEST(WebSocket, CreateRejectsBadOptions) {
  ServerOptions options = TestOptions();
  options.websocket_routes[kPath] = nullptr;
  EXPECT_EQ(Server::Create(options, NotFoundHandler).status().code(), StatusCode::kInvalidArgument);
  options = TestOptions();
  options.ws_ping_interval = 0s;
  EXPECT_EQ(Server::Create(options, NotFoundHandler).status().code(), StatusCode::kInvalidArgument);
  options = TestOptions();
  options.ws_max_message_bytes = 0;
  EXPECT_EQ(Server::Create(options, NotFoundHandler).status().code(), StatusCode::kInvalidArgument);
}

using ::gpunex::testing::TlsFiles;

class TlsWsClient : public BasicWsClient<asio::ssl::stream<beast::tcp_stream>> {
 public:
  explicit TlsWsClient(asio::ssl::context& ctx) { ws_.emplace(ioc_, ctx); }
  error_code TlsHandshake() {
    SSL_set_tlsext_host_name(ws_->next_layer().native_handle(), "localhost");
    return Run([&](auto handler) {
      ws_->next_layer().async_handshake(asio::ssl::stream_base::client, handler);
    });
  }
};

TEST(WebSocket, WorksOverTls) {
  TlsFiles files;
  ASSERT_TRUE(files.ok());
  auto probe = std::make_shared<Probe>();
  ServerOptions options = WsOptions(probe);
  options.tls_cert_file = files.cert_path();
  options.tls_key_file = files.key_path();
  TestServer ts(options);

  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.load_verify_file(files.cert_path());
  ctx.set_verify_mode(asio::ssl::verify_peer);
  ctx.set_verify_callback(asio::ssl::host_name_verification("localhost"));
  {
    TlsWsClient client(ctx);
    ASSERT_FALSE(client.Connect(ts.port()));
    error_code ec = client.TlsHandshake();
    ASSERT_FALSE(ec) << ec.message();
    ec = client.Handshake();
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_FALSE(client.Write("over tls"));
    std::string reply;
    ASSERT_FALSE(client.Read(&reply));
    EXPECT_EQ(reply, "over tls");
    EXPECT_FALSE(client.Close());
  }
  {
    TlsWsClient client(ctx);
    ASSERT_FALSE(client.Connect(ts.port()));
    ASSERT_FALSE(client.TlsHandshake());
    websocket::response_type res;
    EXPECT_EQ(client.Handshake(kPath, "bad", &res), websocket::error::upgrade_declined);
    EXPECT_EQ(res.result_int(), 401);
  }
  {
    // Shutdown says goodbye over TLS too.
    TlsWsClient client(ctx);
    ASSERT_FALSE(client.Connect(ts.port()));
    ASSERT_FALSE(client.TlsHandshake());
    ASSERT_FALSE(client.Handshake());
    std::thread stopper([&] { ts.server().Shutdown(); });
    std::string text;
    EXPECT_EQ(client.Read(&text), websocket::error::closed);
    EXPECT_EQ(client.reason().code, websocket::close_code::going_away);
    stopper.join();
    EXPECT_TRUE(ts.WaitForRun(5s));
  }
  EXPECT_EQ(probe->Closes(), 2);
}

}  // namespace
}  // namespace gpunex::platform::http
