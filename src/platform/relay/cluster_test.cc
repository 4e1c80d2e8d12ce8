// The cluster's registry (cluster_store.h) on both backends: instances find the one that
// holds a machine's data channel, check each other's secrets, and forget the silent ones.
#include <gtest/gtest.h>

#include "platform/relay/cluster_store.h"
#include "platform/relay/peer.h"
#include "platform/testing/platform_test.h"

namespace gpunex::platform::relay {
namespace {

using namespace std::chrono_literals;

class ClusterTest : public testing::PlatformTest {
 protected:
  void SetUp() override {
    PlatformTest::SetUp();
    if (IsSkipped()) return;
    a_ = std::make_unique<Cluster>(db(), clock_, ClusterOptions{}, "http://10.0.0.11:8080");
    b_ = std::make_unique<Cluster>(db(), clock_, ClusterOptions{}, "http://10.0.0.12:8080");
    ASSERT_TRUE(a_->Register().ok());
    ASSERT_TRUE(b_->Register().ok());
  }

  std::optional<PeerRoute> RouteFrom(Cluster& c, const std::string& machine) {
    auto r = c.Route(machine);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::nullopt;
  }

  std::unique_ptr<Cluster> a_, b_;
};

TEST_P(ClusterTest, AStreamGoesToTheInstanceThatHoldsTheMachineWithItsCallersSecret) {
  a_->Holding("mch_1", true);
  auto route = RouteFrom(*b_, "mch_1");
  ASSERT_TRUE(route.has_value());
  EXPECT_EQ(route->instance_id, a_->id());
  EXPECT_EQ(route->url, "http://10.0.0.11:8080" + std::string(kPeerPath));
  // The holder lets the caller in by the caller's secret, and nobody with another.
  EXPECT_TRUE(a_->Verify(route->authorization));
  EXPECT_FALSE(a_->Verify(route->authorization + "x"));
  EXPECT_FALSE(a_->Verify("Bearer " + b_->id() + ".gpx_i_guess"));
  EXPECT_FALSE(a_->Verify("Bearer gpx_s_a_user_session"));
  EXPECT_FALSE(a_->Verify(""));
  // The holder routes nowhere (it opens the stream itself); an unknown machine has none.
  EXPECT_FALSE(RouteFrom(*a_, "mch_1").has_value());
  EXPECT_FALSE(RouteFrom(*b_, "mch_2").has_value());
  // Secrets are stored hashed.
  EXPECT_EQ(Number("SELECT COUNT(*) FROM cluster_instances WHERE secret_hash LIKE 'gpx%'"), 0);
}

TEST_P(ClusterTest, AnAgentThatMovesTakesItsMachineAndTheOldHoldersGoodbyeChangesNothing) {
  a_->Holding("mch_1", true);
  b_->Holding("mch_1", true);   // the agent reconnected to b
  a_->Holding("mch_1", false);  // a notices its old channel closed, later
  EXPECT_FALSE(RouteFrom(*b_, "mch_1").has_value());
  auto route = RouteFrom(*a_, "mch_1");
  ASSERT_TRUE(route.has_value());
  EXPECT_EQ(route->instance_id, b_->id());
  b_->Holding("mch_1", false);
  EXPECT_FALSE(RouteFrom(*a_, "mch_1").has_value());
}

TEST_P(ClusterTest, ASilentInstanceIsTakenForDeadThenForgottenAndComesBackWhenItBeats) {
  a_->Holding("mch_1", true);
  auto route = RouteFrom(*b_, "mch_1");
  ASSERT_TRUE(route.has_value());
  clock_.Advance(11s);                                // both silent past stale_after_s (10 s)
  EXPECT_FALSE(RouteFrom(*b_, "mch_1").has_value());  // a is taken for dead
  EXPECT_FALSE(a_->Verify(route->authorization));     // and so is b, the caller
  ASSERT_TRUE(b_->Heartbeat().ok());
  EXPECT_TRUE(a_->Verify(route->authorization));
  EXPECT_FALSE(RouteFrom(*b_, "mch_1").has_value());
  ASSERT_TRUE(a_->Heartbeat().ok());
  EXPECT_TRUE(RouteFrom(*b_, "mch_1").has_value());

  // An hour of silence (or a clock that jumped): b forgets a and what it held; a's next
  // heartbeat writes it again, and a records its machines at once.
  clock_.Advance(2h);
  const std::vector<std::string> none;
  auto b_again = b_->Heartbeat(&none);
  ASSERT_TRUE(b_again.ok());
  EXPECT_FALSE(*b_again);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM cluster_instances"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM relay_holders"), 0);
  const std::vector<std::string> mine = {"mch_1"};
  auto a_again = a_->Heartbeat(&mine);
  ASSERT_TRUE(a_again.ok());
  EXPECT_TRUE(*a_again);
  auto back = RouteFrom(*b_, "mch_1");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->instance_id, a_->id());
  EXPECT_TRUE(a_->Verify(back->authorization));
}

TEST_P(ClusterTest, AnInstanceThatLeavesTakesItsRowsWithIt) {
  a_->Holding("mch_1", true);
  a_->Holding("mch_2", true);
  a_->Leave();
  EXPECT_FALSE(RouteFrom(*b_, "mch_1").has_value());
  EXPECT_EQ(Number("SELECT COUNT(*) FROM relay_holders"), 0);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM cluster_instances"), 1);
}

TEST(InstanceUrlTest, TheSettingElseListenWhenItNamesAnAddress) {
  ClusterOptions set;
  set.instance_url = "http://10.0.0.11:8080";
  EXPECT_EQ(InstanceUrl(set, "0.0.0.0:80", false), "http://10.0.0.11:8080");
  EXPECT_EQ(InstanceUrl({}, "127.0.0.1:8080", false), "http://127.0.0.1:8080");
  EXPECT_EQ(InstanceUrl({}, "10.0.0.11:8443", true), "https://10.0.0.11:8443");
  EXPECT_EQ(InstanceUrl({}, "[::1]:8080", false), "http://[::1]:8080");
  for (const char* wildcard : {"0.0.0.0:8080", "[::]:8080", ":8080"}) {
    EXPECT_EQ(InstanceUrl({}, wildcard, false), "") << wildcard;
  }
}

}  // namespace

GPUNEX_INSTANTIATE_BACKENDS(ClusterTest);

}  // namespace gpunex::platform::relay
