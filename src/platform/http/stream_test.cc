// Stream routes (stream.h) of a real Server over loopback, with a small Beast client.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/testing/tls_files.h"
#include "platform/http/server.h"
#include "platform/http/testing/test_client.h"
#include "platform/http/testing/test_server.h"

namespace gpunex::platform::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

using testing::BeastResponse;
using testing::Client;
using testing::ErrorCode;
using testing::JsonBody;
using testing::TestOptions;
using testing::TestServer;
using testing::TlsClient;

constexpr char kDown[] = "/bench/down";
constexpr char kUp[] = "/bench/up";

// Counts the grants alive, so tests can see that a transfer released its hold.
struct Holds {
  std::atomic<int> alive{0};
  std::shared_ptr<void> Take() {
    struct Hold {
      explicit Hold(std::atomic<int>* n) : n(n) { ++*n; }
      ~Hold() { --*n; }
      std::atomic<int>* n;
    };
    return std::make_shared<Hold>(&alive);
  }
  bool WaitForNone() {
    for (int i = 0; i < 500 && alive.load() != 0; ++i) std::this_thread::sleep_for(10ms);
    return alive.load() == 0;
  }
};

// Grants `bytes` to requests carrying "Authorization: Bearer ok"; others are refused 401.
ServerOptions StreamOptions(Holds* holds, uint64_t bytes) {
  ServerOptions options = TestOptions();
  options.max_body_bytes = 1024;
  auto authorize = [holds, bytes](const Request& req) -> StatusOr<StreamGrant> {
    if (req.Header("authorization") != "Bearer ok") return Unauthenticated("no");
    StreamGrant grant;
    grant.bytes = req.Query("bytes").empty() ? bytes : std::stoull(req.Query("bytes"));
    grant.hold = holds->Take();
    return grant;
  };
  options.stream_routes[kDown] = {StreamRoute::Kind::kDownload, authorize};
  options.stream_routes[kUp] = {StreamRoute::Kind::kUpload, authorize};
  return options;
}

Response Ok(Request&) { return Response::Text(200, "handler"); }

// The token StreamOptions' authorizer accepts.
const testing::HeaderList kAuth = {{"Authorization", "Bearer ok"}};

TEST(Stream, DownloadSendsTheGrantedBytesAndKeepsTheConnection) {
  Holds holds;
  TestServer ts(StreamOptions(&holds, 0), Ok);
  Client client(ts.port());
  const uint64_t n = (3 << 20) + 5;  // more than one buffer, not a whole number of them
  auto res = client.Exchange(bhttp::verb::get, std::string(kDown) + "?bytes=" + std::to_string(n),
                             "", kAuth);
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res[bhttp::field::content_length], std::to_string(n));
  EXPECT_EQ(res[bhttp::field::content_type], "application/octet-stream");
  EXPECT_EQ(res[bhttp::field::content_encoding], "");
  ASSERT_EQ(res.body().size(), n);
  // Not a constant fill: many distinct byte values in every 4 KiB.
  std::set<char> distinct(res.body().begin(), res.body().begin() + 4096);
  EXPECT_GT(distinct.size(), 200u);
  EXPECT_TRUE(res.keep_alive());
  // The same connection carries the next request, streamed or not.
  res = client.Exchange(bhttp::verb::get, std::string(kDown) + "?bytes=1", "", kAuth);
  EXPECT_EQ(res.body().size(), 1u);
  res = client.Exchange(bhttp::verb::get, "/other", "", kAuth);
  EXPECT_EQ(res.body(), "handler");
  EXPECT_TRUE(holds.WaitForNone());
}

TEST(Stream, RefusalIsTheAuthorizersStatus) {
  Holds holds;
  TestServer ts(StreamOptions(&holds, 10), Ok);
  Client client(ts.port());
  auto res = client.Exchange(bhttp::verb::get, kDown);
  EXPECT_EQ(res.result_int(), 401);
  EXPECT_EQ(ErrorCode(res), "unauthenticated");
  EXPECT_EQ(res[bhttp::field::cache_control], "no-store");
  // A refusal without a body keeps the connection.
  res = client.Exchange(bhttp::verb::get, kDown, "", kAuth);
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body().size(), 10u);
}

TEST(Stream, AuthorizerExceptionIs500WithoutItsText) {
  ServerOptions options = TestOptions();
  options.stream_routes[kDown] = {
      StreamRoute::Kind::kDownload,
      [](const Request&) -> StatusOr<StreamGrant> { throw std::runtime_error("secret detail"); }};
  TestServer ts(options, Ok);
  Client client(ts.port());
  auto res = client.Exchange(bhttp::verb::get, kDown, "", kAuth);
  EXPECT_EQ(res.result_int(), 500);
  EXPECT_EQ(ErrorCode(res), "internal");
  EXPECT_EQ(res.body().find("secret"), std::string::npos);
}

TEST(Stream, WrongMethodIs405) {
  Holds holds;
  TestServer ts(StreamOptions(&holds, 10), Ok);
  Client client(ts.port());
  auto res = client.Exchange(bhttp::verb::post, kDown, "x", kAuth);
  EXPECT_EQ(res.result_int(), 405);
  EXPECT_EQ(res[bhttp::field::allow], "GET");
  EXPECT_TRUE(client.ClosedByPeer());  // the body was not read
  Client other(ts.port());
  res = other.Exchange(bhttp::verb::get, kUp, "", kAuth);
  EXPECT_EQ(res.result_int(), 405);
  EXPECT_EQ(res[bhttp::field::allow], "POST");
  EXPECT_EQ(holds.alive.load(), 0);
}

TEST(Stream, UploadReadsABodyLargerThanMaxBodyBytes) {
  Holds holds;
  TestServer ts(StreamOptions(&holds, 8 << 20), Ok);
  Client client(ts.port());
  const size_t n = (5 << 20) + 3;
  auto res = client.Exchange(bhttp::verb::post, kUp, std::string(n, 'u'), kAuth);
  ASSERT_EQ(res.result_int(), 200) << res.body();
  json::value v = JsonBody(res);
  EXPECT_EQ(v.at("bytes").to_number<uint64_t>(), n);
  EXPECT_GE(v.at("seconds").to_number<double>(), 0.0);
  EXPECT_TRUE(res.keep_alive());
  // Other paths keep max_body_bytes.
  res = client.Exchange(bhttp::verb::post, "/other", std::string(2048, 'x'), kAuth);
  EXPECT_EQ(res.result_int(), 413);
  EXPECT_TRUE(holds.WaitForNone());
}

TEST(Stream, ChunkedUploadIsCounted) {
  Holds holds;
  TestServer ts(StreamOptions(&holds, 8 << 20), Ok);
  Client client(ts.port());
  std::string req =
      "POST /bench/up HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ok\r\nTransfer-Encoding: "
      "chunked\r\n\r\n";
  const std::string piece(300000, 'c');
  for (int i = 0; i < 7; ++i) req += "493e0\r\n" + piece + "\r\n";  // 0x493e0 = 300000
  req += "0\r\n\r\n";
  ASSERT_FALSE(client.WriteRaw(req));
  BeastResponse res;
  ASSERT_FALSE(client.Read(&res));
  ASSERT_EQ(res.result_int(), 200) << res.body();
  EXPECT_EQ(JsonBody(res).at("bytes").to_number<uint64_t>(), 7u * 300000u);
}

TEST(Stream, UploadOverTheGrantIs413) {
  Holds holds;
  TestServer ts(StreamOptions(&holds, 1000), Ok);
  {
    // Announced by Content-Length: refused before the body is read.
    Client client(ts.port());
    auto res = client.Exchange(bhttp::verb::post, kUp, std::string(1001, 'x'), kAuth);
    EXPECT_EQ(res.result_int(), 413);
    EXPECT_EQ(ErrorCode(res), "payload_too_large");
    EXPECT_TRUE(client.ClosedByPeer());
  }
  {
    // Found out while reading chunks.
    Client client(ts.port());
    ASSERT_FALSE(
        client.WriteRaw("POST /bench/up HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                        "ok\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n" +
                        std::string(1000, 'x') + "\r\n1\r\nx\r\n0\r\n\r\n"));
    BeastResponse res;
    ASSERT_FALSE(client.Read(&res));
    EXPECT_EQ(res.result_int(), 413);
  }
  EXPECT_TRUE(holds.WaitForNone());
}

TEST(Stream, ExpectContinueIsAnsweredOnlyAfterAuthorization) {
  Holds holds;
  TestServer ts(StreamOptions(&holds, 1 << 20), Ok);
  const std::string head =
      "POST /bench/up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n";
  {
    // Refused: the final answer comes without the body having been sent.
    Client client(ts.port());
    ASSERT_FALSE(client.WriteRaw(head + "\r\n"));
    BeastResponse res;
    ASSERT_FALSE(client.Read(&res));
    EXPECT_EQ(res.result_int(), 401);
  }
  {
    Client client(ts.port());
    ASSERT_FALSE(client.WriteRaw(head + "Authorization: Bearer ok\r\n\r\n"));
    bhttp::response_parser<bhttp::string_body> cont;
    ASSERT_FALSE(client.ReadHeader(&cont));
    EXPECT_EQ(cont.get().result_int(), 100);
    ASSERT_FALSE(client.WriteRaw("hello"));
    BeastResponse res;
    ASSERT_FALSE(client.Read(&res));
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(JsonBody(res).at("bytes").to_number<int>(), 5);
  }
}

TEST(Stream, ClientLeavingMidDownloadReleasesTheHold) {
  Holds holds;
  TestServer ts(StreamOptions(&holds, uint64_t{1} << 30), Ok);
  Client client(ts.port());
  bhttp::request<bhttp::string_body> req{bhttp::verb::get, kDown, 11};
  req.set(bhttp::field::host, "x");
  req.set(bhttp::field::authorization, "Bearer ok");
  ASSERT_FALSE(client.Send(std::move(req)));
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(boost::none);
  ASSERT_FALSE(client.ReadHeader(&parser));
  EXPECT_EQ(parser.get().result_int(), 200);
  EXPECT_EQ(holds.alive.load(), 1);  // the server is still sending
  client.Close();
  EXPECT_TRUE(holds.WaitForNone());
}

TEST(Stream, StalledTransfersAreDropped) {
  Holds holds;
  ServerOptions options = StreamOptions(&holds, uint64_t{1} << 30);
  options.read_timeout = std::chrono::seconds(1);
  TestServer ts(options, Ok);
  // A download nobody reads.
  Client reader(ts.port());
  bhttp::request<bhttp::string_body> req{bhttp::verb::get, kDown, 11};
  req.set(bhttp::field::host, "x");
  req.set(bhttp::field::authorization, "Bearer ok");
  ASSERT_FALSE(reader.Send(std::move(req)));
  // An upload that stops sending.
  Client writer(ts.port());
  ASSERT_FALSE(
      writer.WriteRaw("POST /bench/up HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                      "ok\r\nContent-Length: 100\r\n\r\n0123456789"));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(holds.alive.load(), 2);
  EXPECT_TRUE(holds.WaitForNone());
  EXPECT_TRUE(writer.ClosedByPeer());
}

TEST(Stream, OverTls) {
  gpunex::testing::TlsFiles files;
  ASSERT_TRUE(files.ok());
  Holds holds;
  ServerOptions options = StreamOptions(&holds, 8 << 20);
  options.tls_cert_file = files.cert_path();
  options.tls_key_file = files.key_path();
  TestServer ts(options, Ok);
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.load_verify_file(files.cert_path());
  ctx.set_verify_mode(asio::ssl::verify_peer);
  TlsClient client(ctx);
  ASSERT_FALSE(client.Connect(ts.port()));
  ASSERT_FALSE(client.Handshake());
  const uint64_t n = (3 << 20) + 11;
  auto res = client.Exchange(bhttp::verb::get, std::string(kDown) + "?bytes=" + std::to_string(n),
                             "", kAuth);
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body().size(), n);
  res = client.Exchange(bhttp::verb::post, kUp, std::string(n, 'u'), kAuth);
  ASSERT_EQ(res.result_int(), 200) << res.body();
  EXPECT_EQ(JsonBody(res).at("bytes").to_number<uint64_t>(), n);
  EXPECT_TRUE(holds.WaitForNone());
}

TEST(Stream, CreateRejectsARouteWithoutAuthorizer) {
  ServerOptions options = TestOptions();
  options.stream_routes["/x"] = {StreamRoute::Kind::kUpload, nullptr};
  EXPECT_EQ(Server::Create(options, Ok).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpunex::platform::http
