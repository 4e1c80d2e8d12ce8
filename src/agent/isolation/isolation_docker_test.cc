// The network isolation check against real, private engines (runtime/testdata/dockerd.sh)
// of each kind: one that isolates workloads as docs/trust.md asks, one with Docker's own
// iptables rules only, and one without any (--iptables=false, the engine of issue 24).
// The check runs this test binary's image (isolation_test_main.cc). Skips when dockerd
// cannot start here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "agent/isolation/isolation_check.h"
#include "agent/isolation/self_image.h"
#include "agent/runtime/test_dockerd.h"

namespace gpunex::agent::isolation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::TestDockerd;

// One private engine per suite, isolating as Suite::kNetwork says.
template <typename Suite>
class EngineSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    engine_ = TestDockerd::Start(&skip_reason_, Suite::kNetwork).release();
    if (engine_) client_ = DockerEngineClient(engine_->socket()).release();
  }
  static void TearDownTestSuite() {
    delete client_;
    client_ = nullptr;
    delete engine_;
    engine_ = nullptr;
  }
  void SetUp() override {
    if (!engine_) GTEST_SKIP() << "dockerd could not start here: " << skip_reason_;
  }

  // One check; its verdict is told exactly once, the report it returns. `during`: the
  // probe's objects in the engine when the verdict was told.
  protocol::NetworkIsolation Check(std::string* during = nullptr) {
    IsolationCheckOptions o;
    o.work_dir = engine_->dir();
    o.owner = "tester";
    std::vector<protocol::NetworkIsolation> told;
    o.on_verdict = [&](const protocol::NetworkIsolation& r) {
      told.push_back(r);
      if (during) *during = Leftovers();
    };
    auto r = CheckNetworkIsolation(*client_, o);
    EXPECT_THAT(told, ElementsAre(r)) << "the verdict is told once, and is what the check says";
    return r;
  }

  // The probe's containers and networks left in the engine.
  std::string Leftovers() {
    std::string out;
    auto containers = client_->ListContainers(kLabelProbe);
    auto networks = client_->ListNetworks(kLabelProbe);
    if (!containers.ok() || !networks.ok()) return "the engine cannot list them";
    for (const auto& c : *containers) out += "container " + c.name + "; ";
    for (const auto& n : *networks) out += "network " + n + "; ";
    return out;
  }

  static inline TestDockerd* engine_ = nullptr;
  static inline DockerClient* client_ = nullptr;
  static inline std::string skip_reason_;
};

class IsolatingEngine : public EngineSuite<IsolatingEngine> {
 public:
  static constexpr char kNetwork[] = "isolated";
};
class DockerRulesOnlyEngine : public EngineSuite<DockerRulesOnlyEngine> {
 public:
  static constexpr char kNetwork[] = "docker";
};
class OpenEngine : public EngineSuite<OpenEngine> {
 public:
  static constexpr char kNetwork[] = "open";
};

TEST_F(IsolatingEngine, PassesAndLeavesNothingBehind) {
  // What an earlier check of this owner left when its agent died, and what another
  // agent's check (in progress on the same engine) has.
  std::string out;
  ASSERT_TRUE(engine_->ImportBusybox(&out)) << out;
  for (const std::string owner : {"tester", "other"}) {
    ASSERT_TRUE(client_
                    ->CreateNetwork("gpunex-probe-" + owner + "-a",
                                    {{kLabelProbe, owner}, {kLabelProbeOwner, owner}}, false, {})
                    .ok());
    ASSERT_EQ(engine_->Cli("create --name gpunex-probe-" + owner + "-host --label " + kLabelProbe +
                               "=" + owner + " --label " + kLabelProbeOwner + "=" + owner + " " +
                               testing::kBusyboxImage + " true",
                           &out),
              0)
        << out;
  }

  auto r = Check();
  EXPECT_EQ(r.state, protocol::kIsolated) << r.detail;
  EXPECT_THAT(r.reached, IsEmpty());
  EXPECT_THAT(r.detail, HasSubstr("reached neither another workload network's container"));
  EXPECT_THAT(r.detail, HasSubstr("timed out")) << "Docker drops traffic between networks";
  EXPECT_THAT(r.detail, HasSubstr("Connection refused")) << "the host rule rejects";
  EXPECT_EQ(Leftovers(), "container gpunex-probe-other-host; network gpunex-probe-other-a; ")
      << "its own leftovers are removed, another agent's check is left alone";
  ASSERT_TRUE(client_->RemoveContainer("gpunex-probe-other-host", true, true).ok());
  ASSERT_TRUE(client_->RemoveNetwork("gpunex-probe-other-a").ok());

  // The image of this program was imported once, and is used again.
  auto files = SelfImageFiles();
  ASSERT_TRUE(files.ok());
  auto ref = SelfImageRef(*files);
  ASSERT_TRUE(ref.ok());
  EXPECT_TRUE(*client_->ImageExists(*ref));
  ASSERT_EQ(engine_->Cli("images -q " + std::string(kSelfImageRepo), &out), 0);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  // The verdict is told before the probe's objects are removed (the removal waits for the
  // engine to list none of them for a few seconds; an agent's first listing need not), and
  // everything is removed before the check returns.
  std::string during;
  EXPECT_EQ(Check(&during).state, protocol::kIsolated);
  EXPECT_THAT(during, HasSubstr("container gpunex-probe-"));
  EXPECT_THAT(during, HasSubstr("network gpunex-probe-"));
  EXPECT_EQ(Leftovers(), "");
}

TEST_F(DockerRulesOnlyEngine, FindsTheHostReachable) {
  // Docker keeps networks apart, but never a container from its own gateway's host.
  auto r = Check();
  EXPECT_EQ(r.state, protocol::kNotIsolated) << r.detail;
  EXPECT_THAT(r.reached, ElementsAre(protocol::kReachedHost));
  EXPECT_THAT(r.detail, HasSubstr("reached a listener on the host at "));
  EXPECT_THAT(IsolationFix(r), HasSubstr("iptables -I INPUT -i gpxwl+ -j REJECT"));
  EXPECT_EQ(Leftovers(), "");
}

TEST_F(OpenEngine, FindsTheOtherWorkloadAndTheHostReachable) {
  auto r = Check();
  EXPECT_EQ(r.state, protocol::kNotIsolated) << r.detail;
  EXPECT_THAT(r.reached, ElementsAre(protocol::kReachedWorkload, protocol::kReachedHost));
  EXPECT_THAT(r.detail, HasSubstr("reached another workload network's container at "));
  EXPECT_EQ(Leftovers(), "");
}

TEST(IsolationCheckWithoutEngine, SaysThereIsNoEngine) {
  auto docker = DockerEngineClient("/nonexistent/docker.sock");
  IsolationCheckOptions o;
  o.work_dir = "/tmp";
  auto r = CheckNetworkIsolation(*docker, o);
  EXPECT_EQ(r.state, protocol::kIsolationNoEngine);
  EXPECT_THAT(r.detail, HasSubstr("/nonexistent/docker.sock"));
  EXPECT_EQ(IsolationFix(r), "");
  // What the agent's first hello says without running a check: the check's own answer, so
  // that the check that follows changes nothing.
  auto unanswered = EngineUnanswered(*docker);
  ASSERT_TRUE(unanswered.has_value());
  EXPECT_EQ(*unanswered, r);
}

}  // namespace
}  // namespace gpunex::agent::isolation
