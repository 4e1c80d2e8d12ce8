// Test support for the HTTP server tests: a small synchronous Beast client over one
// connection, plain or TLS. Every operation times out after 10 s, so a misbehaving server
// fails the test instead of hanging it. For tests only (it includes Beast and Asio).
#pragma once

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json.h"

namespace gpunex::platform::http::testing {

using BeastResponse = boost::beast::http::response<boost::beast::http::string_body>;
using HeaderList = std::vector<std::pair<std::string, std::string>>;

template <typename Stream>
class BasicClient {
 public:
  using error_code = boost::system::error_code;

  // Runs one asynchronous operation started by `start` to completion.
  template <typename Start>
  error_code Run(Start start) {
    error_code result = boost::asio::error::would_block;
    boost::beast::get_lowest_layer(*stream_).expires_after(std::chrono::seconds(10));
    start([&result](error_code ec, auto&&...) { result = ec; });
    ioc_.restart();
    ioc_.run();
    return result;
  }

  error_code Connect(uint16_t port, std::string_view host = "127.0.0.1") {
    boost::asio::ip::tcp::endpoint endpoint(boost::asio::ip::make_address(host), port);
    return Run([&](auto handler) {
      boost::beast::get_lowest_layer(*stream_).async_connect(endpoint, handler);
    });
  }

  error_code WriteRaw(const std::string& bytes) {
    return Run([&](auto handler) {
      boost::asio::async_write(*stream_, boost::asio::buffer(bytes), handler);
    });
  }

  error_code Send(boost::beast::http::request<boost::beast::http::string_body> req) {
    req.prepare_payload();
    return Run([&](auto handler) { boost::beast::http::async_write(*stream_, req, handler); });
  }

  // Reads one response (of up to 64 MiB); `head`: the answer to a HEAD request.
  error_code Read(BeastResponse* res, bool head = false) {
    boost::beast::http::response_parser<boost::beast::http::string_body> parser;
    parser.body_limit(64 << 20);
    parser.skip(head);
    error_code ec = Run(
        [&](auto handler) { boost::beast::http::async_read(*stream_, buffer_, parser, handler); });
    if (!ec) *res = parser.release();
    return ec;
  }

  // Reads only a response header.
  error_code ReadHeader(
      boost::beast::http::response_parser<boost::beast::http::string_body>* parser) {
    return Run([&](auto handler) {
      boost::beast::http::async_read_header(*stream_, buffer_, *parser, handler);
    });
  }

  // Sends a request and reads its response; fails the test on an I/O error.
  BeastResponse Exchange(boost::beast::http::verb method, std::string target, std::string body = "",
                         const HeaderList& headers = {}) {
    boost::beast::http::request<boost::beast::http::string_body> req{method, target, 11};
    req.set(boost::beast::http::field::host, "localhost");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = std::move(body);
    BeastResponse res;
    error_code ec = Send(std::move(req));
    EXPECT_FALSE(ec) << ec.message();
    if (!ec) ec = Read(&res, method == boost::beast::http::verb::head);
    EXPECT_FALSE(ec) << ec.message();
    return res;
  }
  BeastResponse Get(std::string target) {
    return Exchange(boost::beast::http::verb::get, std::move(target));
  }

  // Whether the server closes the connection (and sends nothing more) within the timeout.
  bool ClosedByPeer() {
    char byte;
    error_code ec = Run(
        [&](auto handler) { stream_->async_read_some(boost::asio::buffer(&byte, 1), handler); });
    return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset ||
           ec == boost::asio::ssl::error::stream_truncated;
  }

  void Close() { boost::beast::get_lowest_layer(*stream_).close(); }

  Stream& stream() { return *stream_; }

 protected:
  boost::asio::io_context ioc_;
  std::optional<Stream> stream_;
  boost::beast::flat_buffer buffer_;
};

// Plain HTTP; connected by the constructor given a port.
class Client : public BasicClient<boost::beast::tcp_stream> {
 public:
  Client() { stream_.emplace(ioc_); }
  explicit Client(uint16_t port) : Client() {
    error_code ec = Connect(port);
    EXPECT_FALSE(ec) << ec.message();
  }
};

// HTTPS: Connect, then Handshake.
class TlsClient : public BasicClient<boost::asio::ssl::stream<boost::beast::tcp_stream>> {
 public:
  explicit TlsClient(boost::asio::ssl::context& ctx) { stream_.emplace(ioc_, ctx); }
  error_code Handshake() {
    SSL_set_tlsext_host_name(stream_->native_handle(), "localhost");
    return Run([&](auto handler) {
      stream_->async_handshake(boost::asio::ssl::stream_base::client, handler);
    });
  }
};

// A response body as JSON (null, with a test failure, when it is not).
inline json::value JsonBody(const BeastResponse& res) {
  auto parsed = ParseJson(res.body());
  EXPECT_TRUE(parsed.ok()) << res.body();
  return parsed.ok() ? *parsed : json::value();
}

// The "error.code" of an error response, or "<none>".
inline std::string ErrorCode(const BeastResponse& res) {
  json::value v = JsonBody(res);
  if (!v.is_object() || !v.as_object().contains("error")) return "<none>";
  return std::string(v.at("error").at("code").as_string());
}

}  // namespace gpunex::platform::http::testing
