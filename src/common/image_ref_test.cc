#include "common/image_ref.h"

#include <gtest/gtest.h>

namespace gpunex {
namespace {

const std::string kDigest = "sha256:" + std::string(64, 'a');

TEST(ImageRef, ParsesNameTagAndDigest) {
  auto r = ParseImageRef("pytorch/pytorch:2.3.0-cuda12.1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->name, "pytorch/pytorch");
  EXPECT_EQ(r->tag, "2.3.0-cuda12.1");
  EXPECT_EQ(r->digest, "");
  EXPECT_EQ(r->domain, "");  // Docker Hub

  r = ParseImageRef("registry.example.com:5000/team/model");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->name, "registry.example.com:5000/team/model");
  EXPECT_EQ(r->domain, "registry.example.com:5000");
  EXPECT_EQ(r->tag, "latest");
  EXPECT_EQ(r->ToString(), "registry.example.com:5000/team/model:latest");

  r = ParseImageRef("localhost/a__b.c-d---e:v1@" + kDigest);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->name, "localhost/a__b.c-d---e");
  EXPECT_EQ(r->domain, "localhost");
  EXPECT_EQ(r->tag, "v1");
  EXPECT_EQ(r->digest, kDigest);

  r = ParseImageRef("busybox@" + kDigest);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->tag, "");
  EXPECT_EQ(r->ToString(), "busybox@" + kDigest);

  EXPECT_TRUE(ParseImageRef("127.0.0.1:1/nope:1"));
  EXPECT_EQ(ParseImageRef("MyRegistry/team/model:v1")->domain, "MyRegistry");  // upper case
  EXPECT_EQ(ParseImageRef("team/model:v1")->domain, "");  // no '.', ':': a Hub path
}

TEST(ImageRef, RejectsMalformedReferences) {
  for (const std::string& bad : std::vector<std::string>{"",
                                                         "upper/CASE",
                                                         "Upper",
                                                         "a//b",
                                                         "/a",
                                                         "a/",
                                                         "a:",
                                                         "a:-x",
                                                         "a b",
                                                         "a..b",
                                                         "a._b",
                                                         "-a",
                                                         "a-",
                                                         "a@sha256:abc",
                                                         "a@md5:" + std::string(32, 'a'),
                                                         "host:port/a",
                                                         "a:" + std::string(129, 't'),
                                                         "a;rm -rf /",
                                                         "a\nb",
                                                         "bad_host!/a/b"}) {
    std::string error;
    EXPECT_FALSE(ParseImageRef(bad, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  std::string error;
  EXPECT_FALSE(ParseImageRef(std::string(256, 'a'), &error));
  EXPECT_NE(error.find("255"), std::string::npos);
  EXPECT_TRUE(ParseImageRef(std::string(255, 'a')));
}

}  // namespace
}  // namespace gpunex
