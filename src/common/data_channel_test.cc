#include "common/data_channel.h"

#include <gtest/gtest.h>

namespace gpunex {
namespace {

TEST(StreamTarget, RoundTrips) {
  StreamTarget t{"wkl_01M953QKHX2WV91S3HKEK5PC5K", 8080};
  const std::string text = EncodeStreamTarget(t);
  EXPECT_EQ(text,
            "{\"kind\":\"port\",\"workload_id\":\"wkl_01M953QKHX2WV91S3HKEK5PC5K\",\"port\":8080}");
  auto back = ParseStreamTarget(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, t);
}

TEST(StreamTarget, RefusesWhatItDoesNotKnow) {
  const std::string id = "wkl_01M953QKHX2WV91S3HKEK5PC5K";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "not a JSON object"},
      {"[1]", "not a JSON object"},
      {"{\"kind\":\"file\",\"workload_id\":\"" + id + "\",\"port\":1}", "kind"},
      {"{\"workload_id\":\"" + id + "\",\"port\":1}", "kind"},
      {"{\"kind\":\"port\",\"workload_id\":\"../etc\",\"port\":1}", "workload_id"},
      {"{\"kind\":\"port\",\"workload_id\":\"" + id + "\",\"port\":0}", "port"},
      {"{\"kind\":\"port\",\"workload_id\":\"" + id + "\",\"port\":65536}", "port"},
      {"{\"kind\":\"port\",\"workload_id\":\"" + id + "\",\"port\":22,\"host\":\"10.0.0.1\"}",
       "host"},
      {std::string(5000, ' '), "too long"},
  };
  for (const auto& [text, why] : bad) {
    auto got = ParseStreamTarget(text);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find(why), std::string::npos)
        << text << ": " << got.status().message();
  }
}

}  // namespace
}  // namespace gpunex
