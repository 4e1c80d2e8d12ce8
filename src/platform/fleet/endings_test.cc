// Who ended a workload (endings.h): each row of docs/billing.md's "Who ended it" -- the
// cause, its party, the sentence the customer reads -- and that the sentence never
// carries the agent's words (which name the provider's addresses).
#include "platform/fleet/endings.h"

#include <gtest/gtest.h>

namespace gpunex::platform::fleet {
namespace {

constexpr char kHubImage[] = "pytorch/pytorch:2.3.0";
constexpr char kOwnRegistryImage[] = "registry.example.com:5000/team/model:v1";

struct Row {
  std::string cause;
  std::string image;
  std::string party;
  std::string sentence;
};

// The table, as docs/billing.md prints it.
const std::vector<Row>& Table() {
  static const std::vector<Row> rows = {
      {protocol::kCauseExited, kHubImage, "customer",
       "The workload ended by itself with exit code 3."},
      {protocol::kCauseOomKilled, kHubImage, "customer",
       "The workload used more memory than its limit of 4096 MiB and was stopped by the "
       "kernel."},
      {protocol::kCauseTimeout, kHubImage, "customer",
       "The workload reached its time limit of 600 seconds."},
      {protocol::kCauseStopped, kHubImage, "customer", "The workload was stopped on request."},
      {protocol::kCauseBadCommand, kHubImage, "customer",
       "The container's command could not be started: check that it exists in the image and "
       "is executable."},
      {protocol::kCauseImageNotFound, kOwnRegistryImage, "customer",
       "The image could not be pulled: check that the reference is right, that the image "
       "exists and that it is public."},
      {protocol::kCauseImageRefused, kOwnRegistryImage, "customer",
       "The image could not be pulled: check that the reference is right, that the image "
       "exists and that it is public."},
      {protocol::kCauseRegistryUnreachable, kOwnRegistryImage, "customer",
       "The image could not be pulled: check that the reference is right, that the image "
       "exists and that it is public."},
      {protocol::kCauseRegistryUnreachable, kHubImage, "provider",
       "The provider's machine could not download the image."},
      {protocol::kCauseRegistryUnreachable, "ghcr.io/team/model:v1", "provider",
       "The provider's machine could not download the image."},
      {protocol::kCauseContainerGone, kHubImage, "provider",
       "The container was removed on the provider's machine."},
      {protocol::kCauseAgentShutdown, kHubImage, "provider",
       "The provider's machine shut its agent down."},
      {protocol::kCauseEngineError, kHubImage, "provider",
       "The container engine on the provider's machine failed."},
      {protocol::kCausePolicyRefused, kHubImage, "provider",
       "The provider's machine refused the container."},
      {kCauseAgentLost, kHubImage, "provider", "The provider's machine lost its connection."},
      {kCauseContainerLost, kHubImage, "provider",
       "The container was gone when the provider's machine reconnected."},
      {kCauseStartRefused, kHubImage, "provider",
       "The provider's machine did not accept the workload."},
  };
  return rows;
}

Workload Ended(const Row& row, const std::string& agent_words) {
  Workload w;
  w.id = "wl_1";
  w.state = WorkloadState::kFailed;
  w.spec.image = row.image;
  w.spec.memory_mb = 4096;
  w.spec.timeout_s = 600;
  w.exit_code = 3;
  w.end_cause = row.cause;
  w.end_party = kEndPartyNames.Parse(row.party);
  w.end_reason = agent_words;
  return w;
}

TEST(Endings, EveryRowOfTheTable) {
  for (const Row& row : Table()) {
    SCOPED_TRACE(row.cause + " " + row.image);
    EXPECT_EQ(Name(PartyOf(row.cause, row.image)), row.party);
    protocol::WorkloadEvent e;
    e.workload_id = "wl_1";
    e.state = "failed";
    e.cause = row.cause;
    e.reason = "whatever the agent wrote";
    const Ending ending = EndingOfEvent(e, row.image);
    EXPECT_EQ(ending.cause, row.cause);
    EXPECT_EQ(Name(ending.party), row.party);
    EXPECT_EQ(CustomerSentence(Ended(row, e.reason)), row.sentence);
  }
}

TEST(Endings, TheCustomersSentenceNeverCarriesTheAgentsWords) {
  const std::string words =
      "image: pulling 10.1.2.3:5000/x:1: docker: Get \"http://10.1.2.3:5000/v2/\": dial tcp "
      "10.1.2.3:5000: connect: connection refused";
  for (const Row& row : Table()) {
    const std::string s = CustomerSentence(Ended(row, words));
    EXPECT_EQ(s.find("10.1.2.3"), std::string::npos) << s;
    EXPECT_EQ(s.find("5000"), std::string::npos) << s;
    EXPECT_EQ(s.find("connection refused"), std::string::npos) << s;
    EXPECT_EQ(s.find("dial tcp"), std::string::npos) << s;
  }
  // Which way a pull failed on the customer's side is not told apart: "not found" from
  // "nothing answers" would tell what listens at a name inside the provider's network.
  Row not_found{protocol::kCauseImageNotFound, kOwnRegistryImage, "customer", ""};
  Row unreachable{protocol::kCauseRegistryUnreachable, kOwnRegistryImage, "customer", ""};
  EXPECT_EQ(CustomerSentence(Ended(not_found, words)), CustomerSentence(Ended(unreachable, words)));
}

TEST(Endings, TheProviderIsToldWhatToFixWithTheMachinesWords) {
  // Every provider-side row has advice of its own, not the catch-all.
  const std::string catch_all = ProviderAdvice(Ended({"no_such_cause", kHubImage, "", ""}, ""));
  for (const Row& row : Table()) {
    if (row.party != "provider") continue;
    const std::string advice = ProviderAdvice(Ended(row, ""));
    EXPECT_NE(advice, catch_all) << row.cause;
    EXPECT_EQ(advice.find("What the machine said"), std::string::npos) << row.cause;
  }
  // No engine, as the agent says it when it refuses a start or its check stops one.
  for (const auto& [cause, words] : std::vector<std::pair<std::string, std::string>>{
           {kCauseStartRefused,
            "start refused by the agent: no Docker engine is reachable on "
            "this machine"},
           {protocol::kCauseEngineError,
            "engine: network isolation no_engine: connect: no such "
            "file or directory"}}) {
    const std::string advice = ProviderAdvice(Ended({cause, kHubImage, "provider", ""}, words));
    EXPECT_TRUE(advice.starts_with("Docker is not running on the machine")) << advice;
    EXPECT_NE(advice.find("sudo systemctl start docker"), std::string::npos) << advice;
    EXPECT_TRUE(advice.ends_with("What the machine said: " + words)) << advice;
  }
  EXPECT_TRUE(ProviderAdvice(Ended({protocol::kCauseEngineError, kHubImage, "provider", ""},
                                   "create: disk full"))
                  .starts_with("Docker failed on the machine"));
}

TEST(Endings, AnExitWithoutACodeAndAnEndBeforeCauses) {
  Row exited{protocol::kCauseExited, kHubImage, "customer", ""};
  Workload w = Ended(exited, "");
  w.exit_code.reset();
  EXPECT_EQ(CustomerSentence(w), "The workload ended by itself.");
  w.end_cause.reset();
  EXPECT_EQ(CustomerSentence(w), "The workload ended.");
  w.end_party = EndParty::kProvider;
  EXPECT_EQ(CustomerSentence(w), "The workload ended on the provider's side.");
  EXPECT_EQ(PartyOf("no_such_cause", kHubImage), EndParty::kProvider);
}

// Agents older than causes send only their reason; it is read as they wrote it.
TEST(Endings, AnEventWithoutACauseIsReadFromItsReason) {
  struct Legacy {
    std::string state, reason, cause, party;
  };
  for (const Legacy& c : std::vector<Legacy>{
           {"exited", "", protocol::kCauseExited, "customer"},
           {"stopped", "", protocol::kCauseStopped, "customer"},
           {"failed", "timeout", protocol::kCauseTimeout, "customer"},
           {"failed", "out of memory", protocol::kCauseOomKilled, "customer"},
           {"failed", "image: pulling x:1: docker: manifest unknown", protocol::kCauseImageNotFound,
            "customer"},
           {"failed", "the container disappeared before its exit code was read",
            protocol::kCauseContainerGone, "provider"},
           {"failed", "policy: HostConfig.PidsLimit must be ...", protocol::kCausePolicyRefused,
            "provider"},
           {"failed", "engine: the Docker socket does not exist", protocol::kCauseEngineError,
            "provider"},
           {"failed", "start: docker: nvidia-container-cli failed", protocol::kCauseEngineError,
            "provider"},
           {"failed", "", protocol::kCauseEngineError, "provider"},
       }) {
    protocol::WorkloadEvent e;
    e.state = c.state;
    e.reason = c.reason;
    const Ending ending = EndingOfEvent(e, kHubImage);
    EXPECT_EQ(ending.cause, c.cause) << c.state << " " << c.reason;
    EXPECT_EQ(Name(ending.party), c.party) << c.state << " " << c.reason;
  }
}

// The one table of the parties' names, as the database, the API and the score read them.
TEST(Endings, EachPartyHasOneName) {
  for (EndParty p : {EndParty::kCustomer, EndParty::kProvider, EndParty::kPlatform}) {
    EXPECT_EQ(kEndPartyNames.Parse(Name(p)), p) << Name(p);
  }
  EXPECT_EQ(Name(EndParty::kPlatform), "platform");
  EXPECT_EQ(kEndPartyNames.Parse("admin"), std::nullopt);
  EXPECT_THROW(kEndPartyNames.ParseStored("Provider"), std::invalid_argument);
}

}  // namespace
}  // namespace gpunex::platform::fleet
