// The server as a reverse proxy (proxy.h), against a scripted upstream: what goes up is
// recorded byte for byte, and what comes down is a canned answer released once the
// whole request has gone up.
#include "platform/http/proxy.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <memory>
#include <string>
#include <thread>

#include "common/thread_annotations.h"
#include "platform/http/testing/test_client.h"
#include "platform/http/testing/test_server.h"

namespace gpunex::platform::http {
namespace {

namespace bhttp = boost::beast::http;
using testing::Client;
using testing::TestOptions;
using testing::TestServer;

// What one exchange's upstream does: answers `answer` once `request_end` has arrived (the
// end of the request's bytes as it goes up), then finishes unless `keep_open`.
struct Script {
  std::string request_end = "\r\n\r\n";
  std::string answer = "";
  bool keep_open = false;
  // Instead of answering: ends at once with this status (an upstream that failed).
  int fail_with = 0;
};

class ScriptedUpstream final : public Upstream {
 public:
  ScriptedUpstream(std::weak_ptr<UpstreamSink> sink, Script script, std::string* received)
      : sink_(std::move(sink)), script_(std::move(script)), received_(received) {}

  StatusOr<size_t> Write(std::string_view data) override EXCLUDES(mu_) {
    bool answer = false;
    {
      MutexLock lock(&mu_);
      received_->append(data);
      if (!answered_ && received_->ends_with(script_.request_end)) {
        answered_ = true;
        pending_ = script_.answer;
        answer = true;
      }
    }
    if (answer) {
      auto sink = sink_.lock();
      if (sink && script_.fail_with != 0) {
        sink->OnEnded(UpstreamEnd{false, script_.fail_with, "nothing answers there"});
      } else if (sink) {
        sink->OnReadable();
        if (!script_.keep_open) sink->OnFinished();
      }
    }
    return data.size();
  }
  Status Finish() override { return Status::Ok(); }
  std::string Read(size_t max) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (script_.fail_with != 0) return {};
    std::string out = pending_.substr(0, max);
    pending_.erase(0, out.size());
    return out;
  }

 private:
  const std::weak_ptr<UpstreamSink> sink_;
  const Script script_;
  Mutex mu_;
  std::string* const received_ GUARDED_BY(mu_);
  std::string pending_ GUARDED_BY(mu_);
  bool answered_ GUARDED_BY(mu_) = false;
};

class ProxyTest : public ::testing::Test {
 protected:
  // A proxy whose every request is granted, target and fields as they came (and as
  // `adjust` changes the grant), upstream `script`; what went up lands in received_.
  // `decide`, when given, decides instead.
  void Start(Script script, std::function<StatusOr<ProxyGrant>(const ProxyRequest&)> decide = {},
             std::function<void(ProxyGrant&)> adjust = {}) {
    ServerOptions o = TestOptions();
    o.proxy = [this, script, decide, adjust](const ProxyRequest& req) -> StatusOr<ProxyGrant> {
      if (decide) return decide(req);
      ProxyGrant g;
      g.target = req.request.target;
      g.fields = req.fields;
      g.open = [this,
                script](std::weak_ptr<UpstreamSink> sink) -> StatusOr<std::unique_ptr<Upstream>> {
        return std::unique_ptr<Upstream>(
            std::make_unique<ScriptedUpstream>(std::move(sink), script, &received_));
      };
      if (adjust) adjust(g);
      return g;
    };
    server_ = std::make_unique<TestServer>(o);
  }

  std::string received_;  // written on the server's strand, read after the exchange
  std::unique_ptr<TestServer> server_;
};

TEST_F(ProxyTest, RequestsGoUpAsSentAndTheConnectionCarriesTheNext) {
  Start(Script{.answer = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"});
  Client c(server_->port());
  for (int i = 0; i < 2; ++i) {
    auto res = c.Exchange(bhttp::verb::get, "/a?b=1", "", {{"X-Test", "1"}, {"Keep-Alive", "5"}});
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.body(), "hello");
    EXPECT_TRUE(res.keep_alive()) << "the upstream's Connection: close is its own";
  }
  // Each went up on a stream of its own, closed after its answer; hop-by-hop fields stay.
  const std::string one =
      "GET /a?b=1 HTTP/1.1\r\nHost: localhost\r\nX-Test: 1\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(received_, one + one);
}

TEST_F(ProxyTest, ChunkedBodiesGoThroughAsFramed) {
  Start(Script{
      .request_end = "0\r\n\r\n",
      .answer =
          "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"});
  Client c(server_->port());
  ASSERT_FALSE(
      c.WriteRaw("POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
  testing::BeastResponse res;
  ASSERT_FALSE(c.Read(&res));
  EXPECT_EQ(res.result_int(), 201);
  EXPECT_EQ(res.body(), "abcde");
  EXPECT_TRUE(res.keep_alive());
  EXPECT_EQ(
      received_,
      "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
      "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
}

TEST_F(ProxyTest, AnAnswerWithoutALengthEndsWithTheConnection) {
  Start(Script{.answer = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it"});
  Client c(server_->port());
  auto res = c.Get("/");
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body(), "all of it");
  EXPECT_FALSE(res.keep_alive());
  // The body ended with the connection: the socket is at its end (the client's parser read
  // it, so asked directly).
  ssize_t n = -1;
  for (int i = 0; i < 100 && n != 0; ++i) {
    char byte = 0;
    n = ::recv(c.stream().socket().native_handle(), &byte, 1, MSG_DONTWAIT);
    if (n != 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(n, 0);
}

TEST_F(ProxyTest, AHeadAnswerEndsWithItsHeaderWhileTheUpstreamStaysOpen) {
  Start(Script{.answer = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", .keep_open = true});
  Client c(server_->port());
  auto res = c.Exchange(bhttp::verb::head, "/");
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res[bhttp::field::content_length], "100");
  EXPECT_TRUE(res.keep_alive());
}

TEST_F(ProxyTest, AnUpstreamThatFailsBeforeAnsweringIsReportedWithItsStatus) {
  Start(Script{.fail_with = 502});
  Client c(server_->port());
  auto res = c.Get("/");
  EXPECT_EQ(res.result_int(), 502);
  EXPECT_NE(res.body().find("nothing answers there"), std::string::npos) << res.body();
}

TEST_F(ProxyTest, AnAnswerThatIsNotHttpIsABadGateway) {
  Start(Script{.answer = "SSH-2.0-OpenSSH_9.2\r\n\r\n"});
  Client c(server_->port());
  auto res = c.Get("/");
  EXPECT_EQ(res.result_int(), 502);
  EXPECT_NE(res.body().find("not valid HTTP"), std::string::npos) << res.body();
}

TEST_F(ProxyTest, TheAuthorizerRefusesOrAnswersByItself) {
  Start(Script{}, [](const ProxyRequest& req) -> StatusOr<ProxyGrant> {
    if (req.request.path == "/private") return Unauthenticated("send a token");
    ProxyGrant g;
    Response to = Response::Text(303, "");
    to.SetHeader("Location", "/elsewhere");
    g.response = std::move(to);
    return g;
  });
  Client c(server_->port());
  auto res = c.Get("/private");
  EXPECT_EQ(res.result_int(), 401);
  EXPECT_NE(res.body().find("send a token"), std::string::npos);
  res = c.Get("/public");
  EXPECT_EQ(res.result_int(), 303);
  EXPECT_EQ(res[bhttp::field::location], "/elsewhere");
}

TEST_F(ProxyTest, RewrittenAnswerFieldsAndNoHeadForAnUpstreamThatWritesItsOwn) {
  Start(Script{.request_end = "body!",
               .answer = "HTTP/1.1 200 OK\r\nServer: Engine/1\r\nContent-Length: 2\r\n\r\nok"},
        {}, [](ProxyGrant& g) {
          g.send_head = false;
          g.rewrite_response = [](int status, HeaderFields& fields) {
            std::erase_if(fields, [](const auto& f) { return f.first == "Server"; });
            fields.emplace_back("X-Status-Seen", std::to_string(status));
          };
        });
  Client c(server_->port());
  auto res = c.Exchange(bhttp::verb::put, "/x", "body!");
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body(), "ok");
  EXPECT_EQ(res[bhttp::field::server], "");
  EXPECT_EQ(res["X-Status-Seen"], "200");
  EXPECT_EQ(received_, "body!");  // the body alone
}

}  // namespace
}  // namespace gpunex::platform::http
