// DialInNetns against containers of a real, private dockerd (test_dockerd.h); the tests
// skip when the engine cannot start here.
#include "agent/runtime/netns_dial.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "agent/runtime/test_dockerd.h"

namespace gpunex::agent {
namespace {

using ::testing::HasSubstr;
using testing::kBusyboxImage;
using namespace std::chrono_literals;

class NetnsDialTest : public testing::DockerSuite<NetnsDialTest> {
 protected:
  // A running container without any network (loopback only) running `script`; the
  // network namespace of its first process.
  std::string Run(const std::string& name, const std::string& script) {
    json::object config{{"Image", kBusyboxImage},
                        {"Cmd", json::array{"sh", "-c", script}},
                        {"Labels", json::object{{"io.gpunex.test", "netns"}}},
                        {"HostConfig", json::object{{"NetworkMode", "none"}, {"Init", true}}}};
    auto id = client_->CreateContainer(name, config);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    if (!id.ok()) return "";
    ids_.push_back(*id);
    EXPECT_TRUE(client_->StartContainer(*id).ok());
    auto info = client_->InspectContainer(*id);
    EXPECT_TRUE(info.ok()) << info.status().ToString();
    if (!info.ok()) return "";
    return ProcessNetns(info->at("State").as_object().at("Pid").to_number<int64_t>());
  }

  // Everything the socket says until the peer closes.
  static std::string ReadAll(int fd) {
    std::string out;
    char buf[256];
    for (int i = 0; i < 200; ++i) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0) {
        out.append(buf, static_cast<size_t>(n));
      } else if (n == 0) {
        break;
      } else {
        std::this_thread::sleep_for(20ms);  // non-blocking: nothing yet
      }
    }
    return out;
  }

  void TearDown() override {
    for (const auto& id : ids_) (void)client_->RemoveContainer(id, true, true);
  }

  std::vector<std::string> ids_;
};

// A container without any network is reached on its own loopback, and only there.
TEST_F(NetnsDialTest, ReachesAPortOfAContainerWithoutNetwork) {
  // The container stays up after nc's one connection: its namespace is dialled again.
  const std::string ns =
      Run("gpunex-netns-listen", "echo hello from inside | nc -l -p 37219; sleep 600");
  ASSERT_FALSE(ns.empty());
  StatusOr<int> fd = Unavailable("not tried");
  for (int i = 0; i < 100 && !fd.ok(); ++i) {  // until nc listens
    fd = DialInNetns(ns, 37219, 2000ms);
    if (!fd.ok()) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  EXPECT_EQ(ReadAll(*fd), "hello from inside\n");
  close(*fd);

  // A port where nothing listens: refused at once.
  auto refused = DialInNetns(ns, 37220, 2000ms);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(), HasSubstr("port 37220 of the container"));
}

TEST_F(NetnsDialTest, ANamespaceThatCannotBeOpenedIsSaidSo) {
  auto r = DialInNetns("/proc/999999999/ns/net", 80, 100ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("cannot open the network namespace"));
}

}  // namespace
}  // namespace gpunex::agent
