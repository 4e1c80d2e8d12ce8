// Which registries a workload's image may name (registries.h) and the one place a
// container is validated (ValidateContainer): the provider's own addresses are refused,
// private ones unless the operator allows them, with a field error naming the image.
#include "platform/fleet/registries.h"

#include <gtest/gtest.h>

#include "common/image_ref.h"
#include "platform/fleet/workloads.h"

namespace gpunex::platform::fleet {
namespace {

RegistryHost HostOf(const std::string& image) {
  auto ref = ParseImageRef(image);
  EXPECT_TRUE(ref) << image;
  return ref ? ClassifyRegistryHost(ref->domain) : RegistryHost::kForbidden;
}

TEST(ClassifyRegistryHost, PublicNamesAndAddresses) {
  for (const char* image :
       {"busybox:1", "pytorch/pytorch:2.3.0", "docker.io/library/busybox:1",
        "ghcr.io/team/model:v1", "registry.example.com:5000/team/model:v1", "8.8.8.8/team/model:v1",
        "1e100.net/x:1", "Registry.Example.COM/x:1", "172.32.0.1:5000/x:1", "11.0.0.1/x:1",
        "192.169.0.1/x:1", "100.128.0.1/x:1"}) {
    EXPECT_EQ(HostOf(image), RegistryHost::kPublic) << image;
  }
}

TEST(ClassifyRegistryHost, TheProvidersOwnHostAndNetworkArePrivate) {
  for (const char* image : {
           "localhost:5000/x:1",
           "localhost/x:1",
           "LOCALHOST:5000/x:1",
           "registry.localhost/x:1",
           "127.0.0.1:5000/x:1",
           "127.0.0.1/x:1",
           "127.255.255.254:80/x:1",
           "10.0.0.5/x:1",
           "10.255.255.255:443/x:1",
           "172.16.0.1/x:1",
           "172.31.255.255/x:1",
           "192.168.1.10:5000/x:1",
           "100.64.0.1/x:1",
           "198.18.0.1/x:1",
           // What the resolver reads as 127.0.0.1 (inet_aton): fewer parts, hex, octal.
           "127.1:5000/x:1",
           "2130706433:5000/x:1",
           "0x7f000001:5000/x:1",
           "0x7f.0.0.1/x:1",
           "0177.0.0.1/x:1",
           "10.1/x:1",
           // Names only the host knows.
           "registry:5000/x:1",
           "MyRegistry/x:1",
           "ip6-localhost:5000/x:1",
           "registry.local/x:1",
           "nas.lan:5000/x:1",
           "metadata.google.internal/x:1",
           "build.corp/x:1",
           "box.home.arpa/x:1",
           "localhost.localdomain/x:1",
           "10.0.0.0.1/x:1",
       }) {
    EXPECT_EQ(HostOf(image), RegistryHost::kPrivate) << image;
  }
}

TEST(ClassifyRegistryHost, LinkLocalUnspecifiedMulticastAndReservedAreNeverRegistries) {
  for (const char* image : {
           "169.254.169.254/latest:1", "169.254.0.1:5000/x:1", "0.0.0.0:5000/x:1", "0:5000/x:1",
           "0.1.2.3/x:1", "224.0.0.1/x:1", "239.255.255.250/x:1", "240.0.0.1/x:1",
           "255.255.255.255/x:1", "0xa9fea9fe:80/x:1", "2852039166:80/x:1",  // 169.254.169.254
       }) {
    EXPECT_EQ(HostOf(image), RegistryHost::kForbidden) << image;
  }
  // Without a '.' or a ':' the first component is a Docker Hub namespace, not a host.
  EXPECT_EQ(HostOf("2852039166/x:1"), RegistryHost::kPublic);
}

TEST(IsDependableRegistry, DockerHubAndTheLargePublicRegistries) {
  for (const char* domain :
       {"", "docker.io", "index.docker.io", "registry-1.docker.io", "ghcr.io", "nvcr.io", "quay.io",
        "gcr.io", "registry.k8s.io", "public.ecr.aws", "mcr.microsoft.com", "GHCR.IO"}) {
    EXPECT_TRUE(IsDependableRegistry(domain)) << domain;
  }
  for (const char* domain : {"registry.example.com", "ghcr.io.example.com", "ghcr.io:5000",
                             "127.0.0.1:5000", "my-ghcr.io", "localhost"}) {
    EXPECT_FALSE(IsDependableRegistry(domain)) << domain;
  }
}

TEST(ValidateContainer, RefusesTheProvidersOwnAddressesNamingTheImage) {
  const ImagePolicy strict;
  ImagePolicy allowing;
  allowing.allow_private_registries = true;
  for (const char* image :
       {"localhost:5000/x:1", "127.0.0.1:5000/gpunex-test/busybox:1", "10.0.0.5/x:1",
        "192.168.1.10:5000/x:1", "registry:5000/x:1", "127.1:5000/x:1"}) {
    FieldErrors e = ValidateContainer({image, {"true"}, {}}, strict);
    ASSERT_EQ(e.size(), 1u) << image;
    EXPECT_EQ(e.begin()->first, "image") << image;
    EXPECT_NE(e.at("image").find("loopback or private address"), std::string::npos)
        << e.at("image");
    // The operator's allowance lets them through.
    EXPECT_TRUE(ValidateContainer({image, {"true"}, {}}, allowing).empty()) << image;
  }
  for (const char* image : {"169.254.169.254/x:1", "0.0.0.0:5000/x:1", "224.0.0.1/x:1"}) {
    for (const ImagePolicy* p : {&strict, static_cast<const ImagePolicy*>(&allowing)}) {
      FieldErrors e = ValidateContainer({image, {}, {}}, *p);
      ASSERT_EQ(e.size(), 1u) << image;
      EXPECT_NE(e.at("image").find("link-local"), std::string::npos) << e.at("image");
    }
  }
  EXPECT_TRUE(
      ValidateContainer({"registry.example.com:5000/team/model:v1", {}, {}}, strict).empty());
  EXPECT_TRUE(ValidateContainer({"busybox:1", {}, {}}, strict).empty());
  // The rest of the container, checked in the same place.
  FieldErrors e = ValidateContainer({"Bad Image",
                                     std::vector<std::string>(65, "x"),
                                     {{"NVIDIA_VISIBLE_DEVICES", "all"}, {"1X", "y"}}},
                                    strict);
  EXPECT_EQ(e.size(), 4u);
  EXPECT_TRUE(e.count("image") && e.count("command") && e.count("env.NVIDIA_VISIBLE_DEVICES") &&
              e.count("env.1X"));
}

}  // namespace
}  // namespace gpunex::platform::fleet
