#include "platform/access/access.h"

#include <gtest/gtest.h>

#include "platform/testing/platform_test.h"

namespace gpunex::platform::access {
namespace {

constexpr std::string_view kId = "rnt_01JD3ZK8Q4W7X9Y2A5B6C7D8E9";

TEST(HostLabelTest, IsTheIdInLowerCaseWithoutItsPrefixAndThePort) {
  EXPECT_EQ(HostLabel(kId, 8080), "01jd3zk8q4w7x9y2a5b6c7d8e9-8080");
}

TEST(PortOfHostTest, ReadsTheLabelBackWhateverTheCaseAndPort) {
  for (std::string host : {"01jd3zk8q4w7x9y2a5b6c7d8e9-8080.localhost",
                           "01JD3ZK8Q4W7X9Y2A5B6C7D8E9-8080.LocalHost:8081"}) {
    auto a = PortOfHost(host, "localhost");
    ASSERT_TRUE(a.has_value()) << host;
    EXPECT_EQ(a->rental_id, kId);
    EXPECT_EQ(a->port, 8080);
    EXPECT_EQ(a->prefix, "");
  }
  auto deep =
      PortOfHost("01jd3zk8q4w7x9y2a5b6c7d8e9-443.rentals.example.com", "rentals.example.com");
  ASSERT_TRUE(deep.has_value());
  EXPECT_EQ(deep->port, 443);
}

TEST(PortOfHostTest, RefusesWhatIsNoPortsHostName) {
  for (std::string host : {"localhost", "localhost:8081", "127.0.0.1:8081", "[::1]:8081",
                           "01jd3zk8q4w7x9y2a5b6c7d8e9-8080.example.com",  // another domain
                           "x01jd3zk8q4w7x9y2a5b6c7d8e9-8080.localhost",   // 27 characters
                           "01jd3zk8q4w7x9y2a5b6c7d8e_-8080.localhost",    // not base32
                           "01jd3zk8q4w7x9y2a5b6c7d8e9-0.localhost",       // port 0
                           "01jd3zk8q4w7x9y2a5b6c7d8e9-65536.localhost",   // beyond 65535
                           "01jd3zk8q4w7x9y2a5b6c7d8e9-080.localhost",     // a leading zero
                           "01jd3zk8q4w7x9y2a5b6c7d8e9-8080.evil-localhost",
                           "01jd3zk8q4w7x9y2a5b6c7d8e9-8080localhost"}) {
    EXPECT_FALSE(PortOfHost(host, "localhost").has_value()) << host;
  }
}

TEST(PortOfPathTest, FindsTheRentalThePortAndThePrefix) {
  const std::string id(kId);
  auto a = PortOfPath("/r/" + id + "/8080/api/x?y=1");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->rental_id, kId);
  EXPECT_EQ(a->port, 8080);
  EXPECT_EQ(a->prefix, "/r/" + id + "/8080");
  auto bare = PortOfPath("/r/" + id + "/8080");
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->prefix, "/r/" + id + "/8080");
  auto query = PortOfPath("/r/" + id + "/8080?gpx_token=x");
  ASSERT_TRUE(query.has_value());
  EXPECT_EQ(query->prefix, "/r/" + id + "/8080");
  for (const std::string& t : std::vector<std::string>{
           "/", "/r/", "/r/" + id, "/r/" + id + "/", "/r/" + id + "/x/", "/r/" + id + "/99999/",
           "/r/usr_01JD3ZK8Q4W7X9Y2A5B6C7D8E9/80/", "/r/rnt_short/80/", "/x/" + id + "/80/"}) {
    EXPECT_FALSE(PortOfPath(t).has_value()) << t;
  }
}

class AccessUrlsTest : public platform::testing::PlatformTest {};

TEST_P(AccessUrlsTest, KeepThePublicUrlsSchemeAndPortInBothForms) {
  AccessOptions o;
  o.listen = "127.0.0.1:0";
  o.domain = "localhost";
  Access a(db(), o);
  EXPECT_FALSE(a.UrlsOf(std::string(kId), 80).has_value());  // not bound yet
  a.Bound("http://127.0.0.1:8081");
  auto urls = a.UrlsOf(std::string(kId), 8888);
  ASSERT_TRUE(urls.has_value());
  EXPECT_EQ(urls->host_url, "http://01jd3zk8q4w7x9y2a5b6c7d8e9-8888.localhost:8081/");
  EXPECT_EQ(urls->path_url, "http://127.0.0.1:8081/r/" + std::string(kId) + "/8888/");

  o.public_url = "https://access.example.com/";
  o.domain = "rentals.example.com";
  Access b(db(), o);
  b.Bound("http://127.0.0.1:8081");  // the configured URL wins
  urls = b.UrlsOf(std::string(kId), 80);
  ASSERT_TRUE(urls.has_value());
  EXPECT_EQ(urls->host_url, "https://01jd3zk8q4w7x9y2a5b6c7d8e9-80.rentals.example.com/");
  EXPECT_EQ(urls->path_url, "https://access.example.com/r/" + std::string(kId) + "/80/");

  o.listen = "";
  Access none(db(), o);
  EXPECT_FALSE(none.UrlsOf(std::string(kId), 80).has_value());
}

GPUNEX_INSTANTIATE_BACKENDS(AccessUrlsTest);

}  // namespace
}  // namespace gpunex::platform::access
