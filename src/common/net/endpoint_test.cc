#include "common/net/endpoint.h"

#include <gtest/gtest.h>

#include <map>

namespace gpunex::net {
namespace {

TEST(ParseWebSocketUrl, SchemesPortsAndTargets) {
  auto ws = ParseWebSocketUrl("ws://Platform.Example:8080/api/v1/agent/connect?v=1#frag");
  ASSERT_TRUE(ws.ok()) << ws.status().ToString();
  EXPECT_FALSE(ws->tls);
  EXPECT_EQ(ws->host, "platform.example");
  EXPECT_EQ(ws->port, 8080);
  EXPECT_EQ(ws->target, "/api/v1/agent/connect?v=1");
  EXPECT_EQ(ws->HostHeader(), "platform.example:8080");
  EXPECT_EQ(ws->Authority(), "platform.example:8080");

  auto https = ParseWebSocketUrl("https://gpunex.example");
  ASSERT_TRUE(https.ok());
  EXPECT_TRUE(https->tls);
  EXPECT_EQ(https->port, 443);
  EXPECT_EQ(https->target, "/");
  EXPECT_EQ(https->HostHeader(), "gpunex.example");
  EXPECT_EQ(https->Authority(), "gpunex.example:443");

  auto http = ParseWebSocketUrl("HTTP://10.0.0.1?x=1");
  ASSERT_TRUE(http.ok());
  EXPECT_FALSE(http->tls);
  EXPECT_EQ(http->port, 80);
  EXPECT_EQ(http->target, "/?x=1");

  auto v6 = ParseWebSocketUrl("wss://[::1]:9443/c");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->Authority(), "[::1]:9443");
  EXPECT_EQ(v6->HostHeader(), "[::1]:9443");
}

TEST(ParseWebSocketUrl, RejectsMalformedUrls) {
  for (const char* url : {"platform.example/connect", "ftp://x/", "ws://", "ws://:80/",
                          "ws://host:0/", "ws://host:65536/", "ws://host:x/", "ws://user:pw@host/",
                          "ws://::1/", "ws://host/a b", "ws://[::1/"}) {
    EXPECT_EQ(ParseWebSocketUrl(url).status().code(), StatusCode::kInvalidArgument) << url;
  }
}

TEST(ParseProxyUrl, CredentialsAndDefaults) {
  auto proxy = ParseProxyUrl("http://agent%40dc:p%3Ass%20word@proxy.corp:3128/");
  ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
  EXPECT_EQ(proxy->host, "proxy.corp");
  EXPECT_EQ(proxy->port, 3128);
  EXPECT_EQ(proxy->authorization, "Basic " + Base64Encode("agent@dc:p:ss word"));

  auto bare = ParseProxyUrl("proxy.corp");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->port, 80);
  EXPECT_EQ(bare->authorization, "");

  for (const char* url : {"https://proxy:443", "socks5://proxy:1080", "http://proxy:99999",
                          "http://proxy/path", "http://%zz@proxy", "http://"}) {
    EXPECT_EQ(ParseProxyUrl(url).status().code(), StatusCode::kInvalidArgument) << url;
  }
}

TEST(NoProxyMatches, DomainsAddressesBlocksAndPorts) {
  EXPECT_TRUE(NoProxyMatches("*", "anything", 443));
  EXPECT_TRUE(NoProxyMatches("example.com", "example.com", 443));
  EXPECT_TRUE(NoProxyMatches("example.com", "api.example.com", 443));
  EXPECT_TRUE(NoProxyMatches(".example.com", "api.example.com", 443));
  EXPECT_TRUE(NoProxyMatches("*.example.com", "api.example.com", 443));
  EXPECT_FALSE(NoProxyMatches("example.com", "badexample.com", 443));
  EXPECT_TRUE(NoProxyMatches("foo, EXAMPLE.com ", "Api.Example.Com", 443));
  EXPECT_TRUE(NoProxyMatches("localhost 127.0.0.1", "127.0.0.1", 80));
  EXPECT_TRUE(NoProxyMatches("10.0.0.0/8", "10.20.30.40", 443));
  EXPECT_FALSE(NoProxyMatches("10.0.0.0/8", "11.0.0.1", 443));
  EXPECT_TRUE(NoProxyMatches("192.168.1.0/24", "192.168.1.77", 443));
  EXPECT_FALSE(NoProxyMatches("192.168.1.0/24", "192.168.2.1", 443));
  EXPECT_TRUE(NoProxyMatches("fd00::/8", "fd12::1", 443));
  EXPECT_FALSE(NoProxyMatches("fd00::/8", "fe80::1", 443));
  EXPECT_TRUE(NoProxyMatches("::1", "::1", 443));
  EXPECT_FALSE(NoProxyMatches("10.0.0.0/8", "example.com", 443));
  EXPECT_TRUE(NoProxyMatches("example.com:8443", "example.com", 8443));
  EXPECT_FALSE(NoProxyMatches("example.com:8443", "example.com", 443));
  EXPECT_TRUE(NoProxyMatches("[::1]:8443", "::1", 8443));
  EXPECT_FALSE(NoProxyMatches("", "example.com", 443));
  EXPECT_FALSE(NoProxyMatches(",,", "example.com", 443));
}

TEST(ChooseProxy, ExplicitThenEnvironment) {
  std::map<std::string, std::string> vars;
  EnvLookup env = [&vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  WebSocketEndpoint wss = *ParseWebSocketUrl("wss://platform.example/c");
  WebSocketEndpoint ws = *ParseWebSocketUrl("ws://platform.example/c");

  auto none = ChooseProxy(wss, "", env);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  vars["https_proxy"] = "http://lower:1";
  vars["HTTP_PROXY"] = "http://plain:2";
  auto lower = ChooseProxy(wss, "", env);
  ASSERT_TRUE(lower.ok() && lower->has_value());
  EXPECT_EQ((*lower)->host, "lower");
  vars["HTTPS_PROXY"] = "http://upper:3";
  EXPECT_EQ((*ChooseProxy(wss, "", env))->host, "upper");
  EXPECT_EQ((*ChooseProxy(ws, "", env))->host, "plain");

  vars["no_proxy"] = ".example";
  EXPECT_FALSE(ChooseProxy(wss, "", env)->has_value());
  EXPECT_FALSE(ChooseProxy(ws, "", env)->has_value());
  // An explicit proxy is used regardless of NO_PROXY.
  auto explicit_proxy = ChooseProxy(wss, "http://chosen:8080", env);
  ASSERT_TRUE(explicit_proxy.ok() && explicit_proxy->has_value());
  EXPECT_EQ((*explicit_proxy)->host, "chosen");
  EXPECT_EQ((*explicit_proxy)->port, 8080);

  vars.erase("no_proxy");
  vars["HTTPS_PROXY"] = "socks5://nope:1080";
  EXPECT_EQ(ChooseProxy(wss, "", env).status().code(), StatusCode::kInvalidArgument);
}

TEST(Base64Encode, Rfc4648Vectors) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode(std::string("\xff\xfe\x00", 3)), "//4A");
}

}  // namespace
}  // namespace gpunex::net
