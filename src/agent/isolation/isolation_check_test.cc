#include "agent/isolation/isolation_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpunex::agent::isolation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

ProbePlan Plan() {
  ProbePlan p;
  p.peer = {"peer", "172.30.0.3", 41000};
  p.workload = {"workload", "172.31.0.2", 41000};
  p.host = {{"host-1", "172.30.0.1", 41000}, {"host-2", "10.0.0.5", 41000}};
  return p;
}

TEST(IsolationCheck, ReadsTheHostListenersAddresses) {
  EXPECT_THAT(ListenerAddresses("address 10.0.0.5\naddress 172.17.0.1\nready\n"),
              ElementsAre("10.0.0.5", "172.17.0.1"));
  EXPECT_THAT(ListenerAddresses("ready\n"), IsEmpty());
}

TEST(IsolationCheck, TargetsTheControlTheOtherWorkloadAndEveryHostAddress) {
  std::vector<std::string> names;
  for (const auto& t : Plan().Targets()) names.push_back(t.name);
  EXPECT_THAT(names, ElementsAre("peer", "workload", "host-1", "host-2"));
}

TEST(IsolationCheck, NothingReachedIsIsolated) {
  auto r = JudgeProbe(Plan(),
                      "reached peer 172.30.0.3:41000\n"
                      "blocked workload 172.31.0.2:41000 timed out\n"
                      "blocked host-1 172.30.0.1:41000 Connection refused\n"
                      "blocked host-2 10.0.0.5:41000 Connection refused\n"
                      "done\n");
  EXPECT_EQ(r.state, protocol::kIsolated);
  EXPECT_THAT(r.reached, IsEmpty());
  EXPECT_THAT(r.detail, HasSubstr("reached neither another workload network's container "
                                  "(172.31.0.2:41000: timed out) nor the host "
                                  "(172.30.0.1:41000: Connection refused; 10.0.0.5:41000: "
                                  "Connection refused)"));
  EXPECT_EQ(IsolationFix(r), "");
}

TEST(IsolationCheck, AnotherWorkloadReachedIsNotIsolated) {
  auto r = JudgeProbe(Plan(),
                      "reached peer 172.30.0.3:41000\n"
                      "reached workload 172.31.0.2:41000\n"
                      "blocked host-1 172.30.0.1:41000 Connection refused\n"
                      "blocked host-2 10.0.0.5:41000 Connection refused\n"
                      "done\n");
  EXPECT_EQ(r.state, protocol::kNotIsolated);
  EXPECT_THAT(r.reached, ElementsAre(protocol::kReachedWorkload));
  EXPECT_EQ(r.detail,
            "a container on a workload network reached another workload network's container "
            "at 172.31.0.2:41000");
  EXPECT_THAT(IsolationFix(r), HasSubstr("iptables"));
  EXPECT_THAT(IsolationFix(r), ::testing::Not(HasSubstr("INPUT")));
}

TEST(IsolationCheck, TheHostReachedIsNotIsolated) {
  auto r = JudgeProbe(Plan(),
                      "reached peer 172.30.0.3:41000\n"
                      "blocked workload 172.31.0.2:41000 timed out\n"
                      "reached host-1 172.30.0.1:41000\n"
                      "reached host-2 10.0.0.5:41000\n"
                      "done\n");
  EXPECT_EQ(r.state, protocol::kNotIsolated);
  EXPECT_THAT(r.reached, ElementsAre(protocol::kReachedHost));
  EXPECT_EQ(r.detail,
            "a container on a workload network reached a listener on the host at "
            "172.30.0.1:41000, 10.0.0.5:41000");
  EXPECT_THAT(IsolationFix(r), HasSubstr("iptables -I INPUT -i gpxwl+ -j REJECT"));
}

TEST(IsolationCheck, BothReached) {
  auto r = JudgeProbe(Plan(),
                      "reached peer 172.30.0.3:41000\n"
                      "reached workload 172.31.0.2:41000\n"
                      "blocked host-1 172.30.0.1:41000 Connection refused\n"
                      "reached host-2 10.0.0.5:41000\n"
                      "done\n");
  EXPECT_EQ(r.state, protocol::kNotIsolated);
  EXPECT_THAT(r.reached, ElementsAre(protocol::kReachedWorkload, protocol::kReachedHost));
  EXPECT_THAT(r.detail, HasSubstr("container at 172.31.0.2:41000 and a listener on the host at "
                                  "10.0.0.5:41000"));
}

TEST(IsolationCheck, AnUnreachableControlProvesNothing) {
  // A prober that cannot reach anything, even on its own network, would pass as isolated.
  auto r = JudgeProbe(Plan(),
                      "blocked peer 172.30.0.3:41000 timed out\n"
                      "blocked workload 172.31.0.2:41000 timed out\n"
                      "blocked host-1 172.30.0.1:41000 timed out\n"
                      "blocked host-2 10.0.0.5:41000 timed out\n"
                      "done\n");
  EXPECT_EQ(r.state, protocol::kIsolationUnverified);
  EXPECT_THAT(r.detail, HasSubstr("could not reach a container on its own network "
                                  "(172.30.0.3:41000: timed out)"));
  EXPECT_THAT(IsolationFix(r), HasSubstr("self-test"));
}

TEST(IsolationCheck, AnUnfinishedOrIncompleteProbeIsUnverified) {
  auto r = JudgeProbe(Plan(), "reached peer 172.30.0.3:41000\n");
  EXPECT_EQ(r.state, protocol::kIsolationUnverified);
  EXPECT_THAT(r.detail, HasSubstr("did not finish"));
  r = JudgeProbe(Plan(),
                 "reached peer 172.30.0.3:41000\n"
                 "blocked workload 172.31.0.2:41000 timed out\n"
                 "blocked host-1 172.30.0.1:41000 Connection refused\n"
                 "done\n");
  EXPECT_EQ(r.state, protocol::kIsolationUnverified);
  EXPECT_THAT(r.detail, HasSubstr("did not try host-2"));
  r = JudgeProbe(Plan(), "");
  EXPECT_EQ(r.state, protocol::kIsolationUnverified);
}

TEST(IsolationCheck, DetailIsBoundedPrintableText) {
  ProbePlan p = Plan();
  p.host.clear();
  std::string out = "reached peer 172.30.0.3:41000\nblocked workload 172.31.0.2:41000 timed out\n";
  for (int i = 0; i < 64; ++i) {
    p.host.push_back({"host-" + std::to_string(i), "10.0.0." + std::to_string(i), 41000});
    out += "blocked host-" + std::to_string(i) + " 10.0.0." + std::to_string(i) +
           ":41000 Connection refused \x01\xff\n";
  }
  auto r = JudgeProbe(p, out + "done\n");
  EXPECT_EQ(r.state, protocol::kIsolated);
  EXPECT_EQ(r.detail.size(), protocol::kMaxIsolationDetail);
  EXPECT_TRUE(IsCleanText(r.detail, false)) << r.detail;
}

}  // namespace
}  // namespace gpunex::agent::isolation
