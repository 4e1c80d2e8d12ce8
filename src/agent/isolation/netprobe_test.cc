#include "agent/isolation/netprobe.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <sstream>
#include <thread>

namespace gpunex::agent::isolation {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A listening socket on 127.0.0.1 that accepts (the kernel completes the handshake) but
// never writes; its port.
class SilentListener {
 public:
  SilentListener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    EXPECT_EQ(listen(fd_, 8), 0);
    socklen_t len = sizeof sa;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
  }
  ~SilentListener() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A port nothing listens on: bound, then closed.
int ClosedPort() {
  SilentListener l;
  return l.port();
}

// ServeBanner on a free port in the background, for `lifetime`.
class Banner {
 public:
  Banner(const std::string& token, std::chrono::milliseconds lifetime) {
    // Another process may take the free port first: try a few.
    for (int attempt = 0; attempt < 5 && !ready_; ++attempt) {
      port_ = ClosedPort();
      auto ready = std::make_shared<std::atomic<bool>>(false);
      auto ended = std::make_shared<std::atomic<bool>>(false);
      thread_ = std::thread([p = port_, token, lifetime, ready, ended] {
        (void)ServeBanner(p, token, lifetime, [ready] { *ready = true; });
        *ended = true;
      });
      while (!*ready && !*ended) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ready_ = *ready;
      if (!ready_) thread_.join();
    }
  }
  ~Banner() {
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return port_; }
  bool ready() const { return ready_; }

 private:
  std::thread thread_;
  int port_ = 0;
  bool ready_ = false;
};

TEST(Netprobe, ParsesTargets) {
  auto t = ParseProbeTarget("host-1=172.17.0.1:41234");
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, (ProbeTarget{"host-1", "172.17.0.1", 41234}));
  for (const char* bad : {"", "x", "=1.2.3.4:5", "a=1.2.3.4", "a=1.2.3.4:0", "a=1.2.3.4:65536",
                          "a=::1:80", "a=example.com:80", "a b=1.2.3.4:5", "a=1.2.3:5"}) {
    EXPECT_FALSE(ParseProbeTarget(bad)) << bad;
  }
}

TEST(Netprobe, TellsTheListenerFromEverythingElse) {
  Banner banner("t0k3n", std::chrono::seconds(2));
  ASSERT_TRUE(banner.ready());
  Banner other("other", std::chrono::seconds(2));
  ASSERT_TRUE(other.ready());
  SilentListener silent;
  const int closed = ClosedPort();
  const auto start = std::chrono::steady_clock::now();
  auto out = ConnectTargets({{"ours", "127.0.0.1", banner.port()},
                             {"theirs", "127.0.0.1", other.port()},
                             {"silent", "127.0.0.1", silent.port()},
                             {"closed", "127.0.0.1", closed}},
                            "t0k3n", std::chrono::milliseconds(700));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].target.name, "ours");
  EXPECT_TRUE(out[0].reached) << out[0].why;
  EXPECT_FALSE(out[1].reached);
  EXPECT_EQ(out[1].why, "another answer") << "a listener with another token is not ours";
  EXPECT_FALSE(out[2].reached);
  EXPECT_EQ(out[2].why, "connected, but no answer");
  EXPECT_FALSE(out[3].reached);
  EXPECT_EQ(out[3].why, "Connection refused");
  // All at once: the silent one's wait is the only long one.
  EXPECT_LT(took, std::chrono::milliseconds(1500));
  EXPECT_GE(took, std::chrono::milliseconds(600));
}

TEST(Netprobe, ConnectPrintsOneLinePerTargetThenDone) {
  Banner banner("abc", std::chrono::seconds(2));
  ASSERT_TRUE(banner.ready());
  const int closed = ClosedPort();
  std::ostringstream out, err;
  int rc = RunNetprobe(
      {"connect", "--token", "abc", "--timeout-ms", "500",
       "a=127.0.0.1:" + std::to_string(banner.port()), "b=127.0.0.1:" + std::to_string(closed)},
      out, err);
  EXPECT_EQ(rc, 0) << err.str();
  EXPECT_EQ(out.str(), "reached a 127.0.0.1:" + std::to_string(banner.port()) +
                           "\nblocked b 127.0.0.1:" + std::to_string(closed) +
                           " Connection refused\ndone\n");
}

TEST(Netprobe, ListenPrintsItsAddressesThenReady) {
  const int port = ClosedPort();
  std::ostringstream out, err;
  int rc = RunNetprobe({"listen", "--port", std::to_string(port), "--token", "abc", "--addresses",
                        "--lifetime-s", "1"},
                       out, err);
  EXPECT_EQ(rc, 0) << err.str();
  auto addresses = LocalIpv4Addresses();
  ASSERT_TRUE(addresses.ok()) << addresses.status().ToString();
  std::string want;
  for (const auto& a : *addresses) {
    EXPECT_THAT(a, ::testing::Not(StartsWith("127."))) << "loopback is left out";
    want += "address " + a + "\n";
  }
  EXPECT_EQ(out.str(), want + "ready\n");
}

TEST(Netprobe, ListenFailsOnATakenPort) {
  SilentListener taken;
  std::ostringstream out, err;
  EXPECT_EQ(RunNetprobe({"listen", "--port", std::to_string(taken.port()), "--token", "abc",
                         "--lifetime-s", "1"},
                        out, err),
            1);
  EXPECT_THAT(err.str(), HasSubstr("cannot listen on port " + std::to_string(taken.port())));
  EXPECT_EQ(out.str(), "") << "never ready";
}

TEST(Netprobe, RefusesBadArguments) {
  const std::vector<std::vector<std::string>> bad = {
      {},
      {"serve"},
      {"listen", "--token", "abc"},
      {"listen", "--port", "0", "--token", "abc"},
      {"listen", "--port", "80", "--token", "a-b"},
      {"listen", "--port", "80"},
      {"connect", "--token", "abc"},
      {"connect", "--token", "abc", "--timeout-ms", "5", "a=1.2.3.4:5"},
      {"connect", "--token", "abc", "not-a-target"},
      {"listen", "--port", "80", "--token", "abc", "a=1.2.3.4:5"},
  };
  for (const auto& args : bad) {
    std::ostringstream out, err;
    EXPECT_EQ(RunNetprobe(args, out, err), 2) << ::testing::PrintToString(args);
    EXPECT_THAT(err.str(), HasSubstr("usage:"));
  }
}

}  // namespace
}  // namespace gpunex::agent::isolation
