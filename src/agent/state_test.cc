#include "agent/state.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "agent/agent.h"
#include "common/ids.h"

namespace gpunex::agent {
namespace {

class StateTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = std::filesystem::temp_directory_path() / NewId("agent_state"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(StateTest, MachineIdentitySurvivesRestart) {
  std::string key;
  {
    auto s = AgentState::Open(dir_.string()).value();
    key = s->machine_key();
    EXPECT_GE(key.size(), 32u);
    EXPECT_EQ(s->machine_id(), "");
    ASSERT_TRUE(s->SetMachineId("mch_1").ok());
  }
  auto again = AgentState::Open(dir_.string()).value();
  EXPECT_EQ(again->machine_key(), key);
  EXPECT_EQ(again->machine_id(), "mch_1");
  struct stat st;
  ASSERT_EQ(::stat((dir_ / "machine.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(StateTest, CommandRecordsAnswerRepeats) {
  {
    auto s = AgentState::Open(dir_.string()).value();
    ASSERT_TRUE(s->Accept("cmd_1").ok());
    ASSERT_TRUE(s->Accept("cmd_2").ok());
    ASSERT_TRUE(s->Finish("cmd_2", false, "no such image", {{"k", 1}}).ok());
  }
  auto s = AgentState::Open(dir_.string()).value();
  auto one = s->Command("cmd_1");
  ASSERT_TRUE(one);
  EXPECT_FALSE(one->done);
  auto two = s->Command("cmd_2");
  ASSERT_TRUE(two);
  EXPECT_TRUE(two->done);
  EXPECT_FALSE(two->ok);
  EXPECT_EQ(two->error, "no such image");
  EXPECT_FALSE(s->Command("cmd_3"));
}

TEST_F(StateTest, TokenIsStoredPrivately) {
  auto s = AgentState::Open(dir_.string()).value();
  ASSERT_TRUE(s->StoreToken("gpx_a_secret").ok());
  EXPECT_EQ(AgentState::Open(dir_.string()).value()->token(), "gpx_a_secret");
  struct stat st;
  ASSERT_EQ(::stat((dir_ / "token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(Backoff, GrowsWithJitterAndIsCapped) {
  for (int i = 0; i < 50; ++i) {
    auto first = Agent::Backoff(0, 60).count();
    EXPECT_GE(first, 500);
    EXPECT_LE(first, 1000);
    auto later = Agent::Backoff(4, 60).count();
    EXPECT_GE(later, 8000);
    EXPECT_LE(later, 16000);
    auto capped = Agent::Backoff(30, 60).count();
    EXPECT_GE(capped, 30000);
    EXPECT_LE(capped, 60000);
  }
}

}  // namespace
}  // namespace gpunex::agent
