// Workloads without HTTP, on both store backends, with a fake agent on the fleet's
// channel (test_util.h): validation of every field by name with nothing stored on a
// refusal, the typed start_workload command, the state machine the agent's events drive
// (and who ended a workload), refused starts, stop, logs, visibility, workloads lost
// while the agent was away, and the "rented" listing of their GPUs.
#include "platform/fleet/workloads.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "platform/fleet/test_util.h"

namespace gpunex::platform::fleet {
namespace {

using ::testing::ElementsAre;
using testing::FakeAgent;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using testing::Snapshot;
using ::testing::UnorderedElementsAre;
using namespace std::string_literals;

std::vector<std::string> FieldsOf(const Status& st) {
  std::vector<std::string> out;
  for (const auto& [field, message] : st.fields()) out.push_back(field);
  return out;
}

class WorkloadsTest : public testing::FleetTestBase {
 protected:
  void SetUp() override {
    FleetTestBase::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    workloads_ = std::make_unique<Workloads>(faults(), fleet(), &clock_);
  }
  void TearDown() override {
    agents_.clear();
    workloads_.reset();
    FleetTestBase::TearDown();
  }
  void Remake(FleetOptions o) {
    workloads_.reset();
    MakeFleet(o);
    workloads_ = std::make_unique<Workloads>(faults(), fleet(), &clock_);
  }

  CreateWorkloadRequest Req(const std::string& machine_id, std::vector<std::string> gpu_ids) {
    CreateWorkloadRequest r;
    r.machine_id = machine_id;
    r.gpu_ids = std::move(gpu_ids);
    r.container.image = "gpunex-test/busybox:1";
    r.container.command = {"sh", "-c", "echo hi; exit 3"};
    return r;
  }
  // Creates a workload that must be accepted.
  Workload MustCreate(const std::string& user, const CreateWorkloadRequest& r) {
    auto w = workloads_->Create(As(user), r);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? *w : Workload{};
  }
  Workload Get(const std::string& id) {
    auto w = workloads_->Get(As(admin_), id);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? *w : Workload{};
  }
  std::string StateOf(const std::string& id) { return std::string(Name(Get(id).state)); }
  // The start_workload command of a workload, as the agent received it.
  std::optional<protocol::Command> StartCommand(FakeAgent& a, const std::string& workload_id) {
    for (const auto& c : a.Commands()) {
      if (c.kind != protocol::kStartWorkload) continue;
      auto spec = protocol::ParseStartWorkload(c.payload);
      if (spec.ok() && spec->workload_id == workload_id) return c;
    }
    return std::nullopt;
  }
  // A workload on `gpu` that the agent brings to `state` (pending: acknowledged only).
  std::string Start(FakeAgent& a, const std::string& gpu, const std::string& state) {
    Workload w = MustCreate(pia_, Req(a.machine_id, {gpu}));
    auto cmd = StartCommand(a, w.id);
    EXPECT_TRUE(cmd) << "no start_workload for " << w.id;
    if (!cmd) return w.id;
    a.Ack(cmd->command_id);
    if (state != "pending") {
      a.Result(cmd->command_id, true);
      a.Event(w.id, state, std::nullopt, "", "ctr-" + w.id);
      EXPECT_EQ(StateOf(w.id), state);
    }
    return w.id;
  }
  std::vector<std::string> Ids(const Page<Workload>& p) {
    std::vector<std::string> out;
    for (const auto& w : p.items) out.push_back(w.id);
    return out;
  }

  std::unique_ptr<Workloads> workloads_;
};

// ---------------------------------------------------------------- Create

TEST_P(WorkloadsTest, CreateNamesEachBadFieldAndStoresNothing) {
  FakeAgent& a = NewAgent(pia_, 5);
  FakeAgent& b = NewAgent(oscar_, 1);
  ASSERT_TRUE(a.Join());
  ASSERT_TRUE(b.Join());
  const std::string mid = a.machine_id;
  const std::vector<std::string> g = GpuIds(mid);
  const std::string theirs = GpuIds(b.machine_id)[0];
  // g[1] busy, g[2] not offered, g[3] being benchmarked, g[4] missing from the machine.
  const std::string busy = Start(a, g[1], "running");
  ASSERT_TRUE(fleet().SetGpuEnabled(As(pia_), mid, g[2], false).ok());
  ASSERT_TRUE(
      fleet()
          .db()
          .Transact([&](store::Tx& tx) {
            return ReportBenchmarkFacts(tx, clock_.Now(), mid, {{g[3], {std::nullopt, "", true}}});
          })
          .ok());
  a.gpus.pop_back();
  ASSERT_TRUE(a.Join({{"ctr-" + busy, busy, "running"}}));
  const size_t commands = a.Commands().size();
  const std::string before = Snapshot(test_db());

  struct Case {
    std::string field;
    std::function<void(CreateWorkloadRequest&)> change;
    std::string user;
  };
  const std::string long_arg(protocol::kMaxCommandArgLength + 1, 'a');
  const std::string long_value(protocol::kMaxEnvValueLength + 1, 'v');
  std::vector<Case> cases = {
      {"machine_id", [&](auto& r) { r.machine_id = ""; }, pia_},
      {"machine_id", [&](auto& r) { r.machine_id = "mch_nosuch"; }, pia_},
      {"machine_id", [&](auto& r) { r.machine_id = b.machine_id; }, pia_},
      {"machine_id", [](auto&) {}, oscar_},
      {"machine_id", [](auto&) {}, customer_},
      {"gpu_ids[0]", [](auto& r) { r.gpu_ids = {"gpu_nosuch"}; }, pia_},
      {"gpu_ids[0]", [&](auto& r) { r.gpu_ids = {theirs}; }, pia_},
      {"gpu_ids[1]",
       [&](auto& r) {
         r.gpu_ids = {g[0], g[1]};
       },
       pia_},
      {"gpu_ids[0]", [&](auto& r) { r.gpu_ids = {g[2]}; }, pia_},
      {"gpu_ids[0]", [&](auto& r) { r.gpu_ids = {g[3]}; }, pia_},
      {"gpu_ids[0]", [&](auto& r) { r.gpu_ids = {g[4]}; }, pia_},
      {"gpu_ids",
       [&](auto& r) {
         r.gpu_ids = {g[0], g[0]};
       },
       pia_},
      {"gpu_ids",
       [&](auto& r) {
         r.gpu_ids.clear();
         for (int i = 0; i < 17; ++i) r.gpu_ids.push_back("gpu_" + std::to_string(i));
       },
       pia_},
      {"image", [](auto& r) { r.container.image = "Not An Image!"; }, pia_},
      {"image", [](auto& r) { r.container.image = ""; }, pia_},
      {"command", [](auto& r) { r.container.command = std::vector<std::string>(65, "x"); }, pia_},
      {"command", [&](auto& r) { r.container.command = {long_arg}; }, pia_},
      {"env.1BAD",
       [](auto& r) {
         r.container.env = {{"1BAD", "x"}};
       },
       pia_},
      {"env.NVIDIA_VISIBLE_DEVICES",
       [](auto& r) {
         r.container.env = {{"NVIDIA_VISIBLE_DEVICES", "all"}};
       },
       pia_},
      {"env.LONG",
       [&](auto& r) {
         r.container.env = {{"LONG", long_value}};
       },
       pia_},
      {"env",
       [](auto& r) {
         for (int i = 0; i < 129; ++i) r.container.env.emplace_back("V" + std::to_string(i), "x");
       },
       pia_},
      {"memory_mb", [](auto& r) { r.memory_mb = protocol::kMinMemoryMb - 1; }, pia_},
      {"memory_mb", [](auto& r) { r.memory_mb = protocol::kMaxMemoryMb + 1; }, pia_},
      {"memory_mb", [](auto& r) { r.memory_mb = 65537; }, pia_},  // the host has 65536 MiB
      {"cpus", [](auto& r) { r.cpus = 0.05; }, pia_},
      {"cpus", [](auto& r) { r.cpus = 256.5; }, pia_},
      {"cpus", [](auto& r) { r.cpus = 16.5; }, pia_},  // the host has 16 cores
      {"pids_limit", [](auto& r) { r.pids_limit = protocol::kMinPids - 1; }, pia_},
      {"pids_limit", [](auto& r) { r.pids_limit = protocol::kMaxPids + 1; }, pia_},
      {"scratch_mb", [](auto& r) { r.scratch_mb = protocol::kMinScratchMb - 1; }, pia_},
      {"scratch_mb", [](auto& r) { r.scratch_mb = protocol::kMaxScratchMb + 1; }, pia_},
      {"timeout_s", [](auto& r) { r.timeout_s = -1; }, pia_},
      {"timeout_s", [](auto& r) { r.timeout_s = protocol::kMaxTimeoutS + 1; }, pia_},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    CreateWorkloadRequest r = Req(mid, {g[0]});
    cases[i].change(r);
    auto w = workloads_->Create(As(cases[i].user), r);
    ASSERT_FALSE(w.ok()) << "case " << i << " (" << cases[i].field << ") was accepted";
    EXPECT_EQ(w.status().code(), StatusCode::kValidationFailed)
        << i << ": " << w.status().ToString();
    EXPECT_THAT(FieldsOf(w.status()), ElementsAre(cases[i].field))
        << i << ": " << w.status().ToString();
  }
  EXPECT_EQ(Snapshot(test_db()), before) << "a refused request stores nothing";
  EXPECT_THAT(a.Commands(), SizeIs(commands)) << "and sends nothing";

  // The bounds themselves are accepted.
  CreateWorkloadRequest low = Req(mid, {g[0]});
  low.memory_mb = protocol::kMinMemoryMb;
  low.cpus = protocol::kMinCpus;
  low.pids_limit = protocol::kMinPids;
  low.scratch_mb = protocol::kMinScratchMb;
  low.timeout_s = protocol::kMaxTimeoutS;
  low.container.env = {{"PATH_EXTRA", ""}};
  Workload w = MustCreate(pia_, low);
  a.Event(w.id, "exited", 0);
  CreateWorkloadRequest high = Req(mid, {g[0]});
  high.memory_mb = 65536;
  high.cpus = 16;
  high.pids_limit = protocol::kMaxPids;
  high.scratch_mb = protocol::kMaxScratchMb;
  high.timeout_s = 0;
  MustCreate(pia_, high);
  // Admins may run workloads on any machine.
  MustCreate(admin_, Req(b.machine_id, {theirs}));
}

TEST_P(WorkloadsTest, TheStartCommandCarriesTheTypedSpec) {
  FakeAgent& a = NewAgent(pia_, 3);
  ASSERT_TRUE(a.Join());
  const std::string mid = a.machine_id;
  const std::vector<std::string> g = GpuIds(mid);
  clock_.Advance(Seconds(1));
  CreateWorkloadRequest r = Req(mid, {g[2], g[0]});
  r.container.env = {{"FOO", "bar"}, {"A", "1"}};
  Workload w = MustCreate(pia_, r);
  EXPECT_EQ(Name(w.state), "pending");
  EXPECT_EQ(w.machine_id, mid);
  EXPECT_EQ(w.provider_id, pia_);
  EXPECT_EQ(w.created_by, pia_);
  EXPECT_EQ(w.purpose, WorkloadPurpose::kCustom);
  EXPECT_THAT(w.gpu_ids, ElementsAre(g[2], g[0]));
  EXPECT_FALSE(w.exit_code);
  EXPECT_EQ(w.created_at, clock_.Now());

  protocol::StartWorkload want;
  want.workload_id = w.id;
  want.image = "gpunex-test/busybox:1";
  want.command = {"sh", "-c", "echo hi; exit 3"};
  want.env = {{"FOO", "bar"}, {"A", "1"}};
  want.gpu_uuids = {a.gpus[2].uuid, a.gpus[0].uuid};
  want.memory_mb = 2 * 4096;  // defaults sized by the two GPUs
  want.cpus = 4;
  want.pids_limit = 1024;
  want.scratch_mb = 4096;
  want.timeout_s = 0;
  EXPECT_EQ(w.spec, want);
  auto cmd = StartCommand(a, w.id);
  ASSERT_TRUE(cmd);
  auto parsed = protocol::ParseStartWorkload(cmd->payload);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, want) << "the agent's parser reads it";
  EXPECT_EQ(Get(w.id).spec, want) << "stored as sent";
  EXPECT_EQ(Text("SELECT state FROM agent_commands WHERE id = ?", {cmd->command_id}), "sent");
  EXPECT_EQ(Number("SELECT COUNT(*) FROM audit_events WHERE action = 'workload.created' "
                   "AND subject = ?",
                   {w.id}),
            1);

  CreateWorkloadRequest one = Req(mid, {g[1]});
  one.container.command.clear();
  Workload w1 = MustCreate(pia_, one);
  EXPECT_EQ(w1.spec.memory_mb, 4096);
  EXPECT_DOUBLE_EQ(w1.spec.cpus, 2);
  EXPECT_THAT(w1.spec.command, IsEmpty());
  a.Event(w1.id, "exited", 0);

  CreateWorkloadRequest given = Req(mid, {g[1]});
  given.memory_mb = 2048;
  given.cpus = 1.5;
  given.pids_limit = 64;
  given.scratch_mb = 100;
  given.timeout_s = 60;
  Workload w2 = MustCreate(pia_, given);
  EXPECT_EQ(w2.spec.memory_mb, 2048);
  EXPECT_DOUBLE_EQ(w2.spec.cpus, 1.5);
  EXPECT_EQ(w2.spec.pids_limit, 64);
  EXPECT_EQ(w2.spec.scratch_mb, 100);
  EXPECT_EQ(w2.spec.timeout_s, 60);
  auto cmd2 = StartCommand(a, w2.id);
  ASSERT_TRUE(cmd2);
  auto parsed2 = protocol::ParseStartWorkload(cmd2->payload);
  ASSERT_TRUE(parsed2.ok()) << parsed2.status().ToString();
  EXPECT_EQ(*parsed2, w2.spec);
}

TEST_P(WorkloadsTest, ACreateWhoseCommitIsInDoubtIsNotLost) {
  FakeAgent& a = NewAgent(pia_, 1);
  ASSERT_TRUE(a.Join());
  faults().FailCommit("INSERT INTO workloads", /*committed=*/true);
  auto w = workloads_->Create(As(pia_), Req(a.machine_id, GpuIds(a.machine_id)));
  EXPECT_EQ(w.status().code(), StatusCode::kOutcomeUnknown);
  EXPECT_THAT(a.Commands(), IsEmpty());
  ASSERT_EQ(Number("SELECT COUNT(*) FROM workloads"), 1);
  const std::string wid = Text("SELECT id FROM workloads");
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_TRUE(StartCommand(a, wid)) << "the sweep delivers the command that did commit";
  EXPECT_THAT(a.Commands(), SizeIs(1));
}

// Creates racing for one GPU (serializable transactions): one wins, the others are told
// the GPU is in use, and only the winner's command goes out.
TEST_P(WorkloadsTest, CreatesRacingForOneGpuBookItOnce) {
  FakeAgent& a = NewAgent(pia_, 1);
  ASSERT_TRUE(a.Join());
  const CreateWorkloadRequest r = Req(a.machine_id, GpuIds(a.machine_id));
  const accounts::Principal p = As(pia_);
  constexpr int kRacers = 4;
  std::vector<Status> results(kRacers);
  std::vector<std::thread> racers;
  for (int i = 0; i < kRacers; ++i) {
    racers.emplace_back([&, i] { results[i] = workloads_->Create(p, r).status(); });
  }
  for (auto& t : racers) t.join();
  int won = 0;
  for (const Status& st : results) {
    if (st.ok()) {
      ++won;
      continue;
    }
    EXPECT_EQ(st.code(), StatusCode::kValidationFailed) << st.ToString();
    EXPECT_THAT(FieldsOf(st), ElementsAre("gpu_ids[0]")) << st.ToString();
  }
  EXPECT_EQ(won, 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM workloads"), 1);
  EXPECT_THAT(a.Commands(), SizeIs(1));
}

// ---------------------------------------------------------------- states

TEST_P(WorkloadsTest, TheAgentsEventsDriveTheState) {
  FakeAgent& a = NewAgent(pia_, 1);
  ASSERT_TRUE(a.Join());
  Workload w = MustCreate(pia_, Req(a.machine_id, GpuIds(a.machine_id)));
  clock_.Advance(Seconds(1));
  a.Event(w.id, "starting", std::nullopt, "", "ctr1");
  Workload got = Get(w.id);
  EXPECT_EQ(Name(got.state), "starting");
  EXPECT_EQ(got.container_id, "ctr1");
  EXPECT_FALSE(got.started_at);
  EXPECT_EQ(got.updated_at, clock_.Now());

  clock_.Advance(Seconds(1));
  const Timestamp t_run = clock_.Now();
  a.Event(w.id, "running");
  got = Get(w.id);
  EXPECT_EQ(Name(got.state), "running");
  EXPECT_EQ(got.started_at, t_run);
  EXPECT_EQ(got.container_id, "ctr1") << "kept when the event names none";

  clock_.Advance(Seconds(1));
  a.Event(w.id, "starting", std::nullopt, "", "ctr-stale");  // stale
  a.Event(w.id, "running", std::nullopt, "", "ctr-again");   // repeated
  got = Get(w.id);
  EXPECT_EQ(Name(got.state), "running");
  EXPECT_EQ(got.started_at, t_run);
  EXPECT_EQ(got.container_id, "ctr1");
  EXPECT_EQ(got.updated_at, t_run);

  clock_.Advance(Seconds(1));
  const Timestamp t_end = clock_.Now();
  a.Event(w.id, "exited", 3, "", "ctr1");
  got = Get(w.id);
  EXPECT_EQ(Name(got.state), "exited");
  EXPECT_EQ(got.exit_code, 3);
  EXPECT_EQ(got.end_party, EndParty::kCustomer);
  EXPECT_EQ(got.end_reason, "exited");
  EXPECT_EQ(got.ended_at, t_end);

  // Ended states are final.
  clock_.Advance(Seconds(1));
  a.Event(w.id, "running");
  a.Event(w.id, "failed", std::nullopt, "oom");
  a.Event(w.id, "exited", 0);
  got = Get(w.id);
  EXPECT_EQ(Name(got.state), "exited");
  EXPECT_EQ(got.exit_code, 3);
  EXPECT_EQ(got.end_reason, "exited");
  EXPECT_EQ(got.ended_at, t_end);
  EXPECT_FALSE(a.channel().closed());

  // Events for a workload the platform does not know, or of another machine, change nothing.
  FakeAgent& b = NewAgent(oscar_, 1);
  ASSERT_TRUE(b.Join());
  Workload other = MustCreate(pia_, Req(a.machine_id, GpuIds(a.machine_id)));
  const std::string before = Snapshot(test_db());
  a.Event("wl_nosuch", "running");
  b.Event(other.id, "running", std::nullopt, "", "sneaky");
  b.Log(other.id, "stdout", 0, "forged\n");
  EXPECT_EQ(Snapshot(test_db()), before);
  EXPECT_FALSE(b.channel().closed());
}

TEST_P(WorkloadsTest, WhoEndedTheWorkload) {
  FakeAgent& a = NewAgent(pia_, 1);
  ASSERT_TRUE(a.Join());
  const std::string g = GpuIds(a.machine_id)[0];
  // The party follows the cause the agent reports (endings.h), whatever the state.
  struct Case {
    std::string state, reason, cause, party, end_reason, end_cause;
  };
  for (const Case& c : std::vector<Case>{
           {"exited", "", "exited", "customer", "exited", "exited"},
           {"stopped", "", "stopped", "customer", "stopped", "stopped"},
           {"failed", "out of memory", "oom_killed", "customer", "out of memory", "oom_killed"},
           {"failed", "timeout", "timeout", "customer", "timeout", "timeout"},
           {"failed", "the container was removed outside the agent", "container_gone", "provider",
            "the container was removed outside the agent", "container_gone"},
           {"stopped", "", "agent_shutdown", "provider", "stopped", "agent_shutdown"},
           {"failed", "image: pulling x: manifest unknown", "image_not_found", "customer",
            "image: pulling x: manifest unknown", "image_not_found"},
           {"failed", "start: docker: exec: \"/x\": no such file", "bad_command", "customer",
            "start: docker: exec: \"/x\": no such file", "bad_command"},
           {"failed", "scratch volume: docker: no space left", "engine_error", "provider",
            "scratch volume: docker: no space left", "engine_error"},
           // Agents from before causes: read from their reason.
           {"failed", "timeout after 60 s", "", "customer", "timeout after 60 s", "timeout"},
           {"failed", "image pull failed: not found", "", "customer",
            "image pull failed: not found", "image_not_found"},
           {"failed", "out of memory", "", "customer", "out of memory", "oom_killed"},
           {"failed", "something else the engine said", "", "provider",
            "something else the engine said", "engine_error"},
           {"failed", "", "", "provider", "failed", "engine_error"},
       }) {
    const std::string wid = Start(a, g, "running");
    a.Event(wid, c.state, std::nullopt, c.reason, "", c.cause);
    Workload w = Get(wid);
    EXPECT_EQ(Name(w.state), c.state) << c.reason;
    EXPECT_EQ(w.end_party, kEndPartyNames.Parse(c.party))
        << c.state << " " << c.reason << " " << c.cause;
    EXPECT_EQ(w.end_reason, c.end_reason);
    EXPECT_EQ(w.end_cause, c.end_cause);
  }
}

TEST_P(WorkloadsTest, AStartTheAgentRefusesFailsTheWorkload) {
  FakeAgent& a = NewAgent(pia_, 2);
  ASSERT_TRUE(a.Join());
  const std::vector<std::string> g = GpuIds(a.machine_id);
  Workload ok = MustCreate(pia_, Req(a.machine_id, {g[1]}));
  auto ok_cmd = StartCommand(a, ok.id);
  ASSERT_TRUE(ok_cmd);
  a.Result(ok_cmd->command_id, true);
  EXPECT_EQ(StateOf(ok.id), "pending") << "a started container reports its own state";

  Workload w = MustCreate(pia_, Req(a.machine_id, {g[0]}));
  EXPECT_EQ(ListingOf(g[0]), "rented");
  auto cmd = StartCommand(a, w.id);
  ASSERT_TRUE(cmd);
  a.Ack(cmd->command_id);
  clock_.Advance(Seconds(1));
  a.Result(cmd->command_id, false, "no Docker engine is reachable on this machine");
  Workload got = Get(w.id);
  EXPECT_EQ(Name(got.state), "failed");
  EXPECT_EQ(got.end_reason,
            "start refused by the agent: no Docker engine is reachable on this "
            "machine");
  // The agent took no start: its machine's doing (a pull or a start that fails afterwards
  // comes as an event, with its cause).
  EXPECT_EQ(got.end_party, EndParty::kProvider);
  EXPECT_EQ(got.end_cause, kCauseStartRefused);
  EXPECT_EQ(got.ended_at, clock_.Now());
  EXPECT_EQ(ListingOf(g[0]), "listed") << "the GPU is free again";
  MustCreate(pia_, Req(a.machine_id, {g[0]}));
}

// Issue 24: nothing is placed on a machine whose agent found workloads there not isolated
// (or could not tell), and a start the agent refuses for it is the provider's failure.
TEST_P(WorkloadsTest, NothingRunsWhereWorkloadsAreNotIsolated) {
  FakeAgent& a = NewAgent(pia_, 1);
  a.host.network_isolation =
      protocol::NetworkIsolation{protocol::kNotIsolated, {protocol::kReachedHost}, "host reached"};
  ASSERT_TRUE(a.Join());
  const std::string g = GpuIds(a.machine_id)[0];
  const std::string before = Snapshot(test_db());
  auto refused = workloads_->Create(As(pia_), Req(a.machine_id, {g}));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(FieldsOf(refused.status()), ElementsAre("machine_id"));
  EXPECT_EQ(refused.status().fields().at("machine_id"),
            "cannot run workloads now: network not isolated: a workload can reach the host's "
            "services; fix: run iptables -I INPUT -i gpxwl+ -j REJECT on the host; then restart "
            "gpunex-agent (docs/trust.md)");
  EXPECT_EQ(Snapshot(test_db()), before);
  EXPECT_THAT(a.Commands(), IsEmpty());

  // Isolated now: it runs; should the agent's own check disagree at the start, the workload
  // fails as the agent says, on the provider's side.
  a.Send(protocol::NetworkIsolation{protocol::kIsolated, {}, "reached neither"});
  const std::string wid = Start(a, g, "pending");
  a.Event(wid, "failed", std::nullopt,
          "engine: network isolation not_isolated: a container on a workload network reached a "
          "listener on the host at 172.18.0.1:41000");
  Workload w = Get(wid);
  EXPECT_EQ(Name(w.state), "failed");
  EXPECT_EQ(w.end_party, EndParty::kProvider);
}

TEST_P(WorkloadsTest, StopAsksTheAgentAndEndedWorkloadsCannotBeStopped) {
  FakeAgent& a = NewAgent(pia_, 2);
  ASSERT_TRUE(a.Join());
  const std::vector<std::string> g = GpuIds(a.machine_id);
  const std::string wid = Start(a, g[0], "running");
  const size_t commands = a.Commands().size();
  for (const std::string& stranger : {oscar_, customer_}) {
    EXPECT_EQ(workloads_->Stop(As(stranger), wid).status().code(), StatusCode::kNotFound);
  }
  EXPECT_EQ(workloads_->Stop(As(pia_), "wl_nosuch").status().code(), StatusCode::kNotFound);
  EXPECT_THAT(a.Commands(), SizeIs(commands));

  auto stopped = workloads_->Stop(As(pia_), wid);
  ASSERT_TRUE(stopped.ok()) << stopped.status().ToString();
  EXPECT_EQ(stopped->id, wid);
  EXPECT_EQ(Name(stopped->state), "running") << "the state follows the agent's report";
  auto commands_now = a.Commands();
  ASSERT_THAT(commands_now, SizeIs(commands + 1));
  EXPECT_EQ(commands_now.back().kind, protocol::kStopWorkload);
  EXPECT_EQ(protocol::ParseStopWorkload(commands_now.back().payload)->workload_id, wid);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM audit_events WHERE action = 'workload.stop_requested' "
                   "AND subject = ?",
                   {wid}),
            1);
  a.Ack(commands_now.back().command_id);
  a.Result(commands_now.back().command_id, true);
  a.Event(wid, "stopped", 137);
  EXPECT_EQ(StateOf(wid), "stopped");
  EXPECT_EQ(Get(wid).end_party, EndParty::kCustomer);

  auto again = workloads_->Stop(As(pia_), wid);
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(a.Commands(), SizeIs(commands + 1));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_commands WHERE kind = 'stop_workload'"), 1);

  const std::string other = Start(a, g[1], "running");
  EXPECT_TRUE(workloads_->Stop(As(admin_), other).ok()) << "admins may stop any workload";
}

// ---------------------------------------------------------------- logs

TEST_P(WorkloadsTest, LogsInOrderStoredOnceAndFollowed) {
  FakeAgent& a = NewAgent(pia_, 1);
  ASSERT_TRUE(a.Join());
  const std::string wid = Start(a, GpuIds(a.machine_id)[0], "running");
  auto page = [&](int limit, std::optional<Cursor> after) {
    auto p = workloads_->Logs(As(pia_), wid, {limit, std::move(after)});
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? *p : LogPage{};
  };
  auto texts = [](const LogPage& p) {
    std::vector<std::string> out;
    for (const auto& c : p.items)
      out.push_back(c.stream + "/" + std::to_string(c.seq) + ":" + c.data);
    return out;
  };
  LogPage empty = page(50, std::nullopt);
  EXPECT_THAT(empty.items, IsEmpty());
  EXPECT_FALSE(empty.position);

  const Timestamp t0 = clock_.Now();
  a.Log(wid, "stdout", 0, "a\n");
  clock_.Advance(Seconds(1));
  a.Log(wid, "stderr", 0, "b\n");
  clock_.Advance(Seconds(1));
  a.Log(wid, "stdout", 1, "c\n");
  clock_.Advance(Seconds(1));
  a.Log(wid, "stdout", 1, "c (repeat)\n");  // a repeat is stored once
  a.Log(wid, "stdout", 0, "a (repeat)\n");
  EXPECT_EQ(Number("SELECT COUNT(*) FROM workload_logs WHERE workload_id = ?", {wid}), 3);

  LogPage all = page(50, std::nullopt);
  EXPECT_THAT(texts(all), ElementsAre("stdout/0:a\n", "stderr/0:b\n", "stdout/1:c\n"));
  EXPECT_EQ(all.items[0].at, t0) << "when the platform received it";
  LogPage first = page(2, std::nullopt);
  EXPECT_THAT(texts(first), ElementsAre("stdout/0:a\n", "stderr/0:b\n"));
  ASSERT_TRUE(first.position);
  LogPage rest = page(2, first.position);
  EXPECT_THAT(texts(rest), ElementsAre("stdout/1:c\n"));
  ASSERT_TRUE(rest.position);
  EXPECT_EQ(*rest.position, *all.position);
  // Following: after the last chunk, an empty page that keeps the position.
  LogPage none = page(2, rest.position);
  EXPECT_THAT(none.items, IsEmpty());
  ASSERT_TRUE(none.position);
  EXPECT_EQ(*none.position, *rest.position);
  clock_.Advance(Seconds(1));
  a.Log(wid, "stdout", 2, "d\n");
  EXPECT_THAT(texts(page(2, none.position)), ElementsAre("stdout/2:d\n"));
  // The limit is kept within [1, kMaxLogPage].
  EXPECT_THAT(page(0, std::nullopt).items, SizeIs(1));
  EXPECT_THAT(page(-5, std::nullopt).items, SizeIs(1));

  EXPECT_EQ(workloads_->Logs(As(oscar_), wid, {}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(workloads_->Logs(As(pia_), "wl_nosuch", {}).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(workloads_->Logs(As(admin_), wid, {}).ok());
}

// Issue 24: output is bytes. Blank lines, whitespace only, an empty chunk and control
// characters are logged (what TEXT cannot hold or a screen should not get is replaced and
// counted), and the connection stays up.
TEST_P(WorkloadsTest, LogDataOfAnyKindIsStoredAndTheSessionStaysUp) {
  FakeAgent& a = NewAgent(pia_, 1);
  ASSERT_TRUE(a.Join());
  const std::string wid = Start(a, GpuIds(a.machine_id)[0], "running");
  const std::vector<std::string> chunks = {"\n", "\n\n\n",   "   ",        "\t\r\n",        "\v\f",
                                           "",   "x\x01y\n", "nul\0byte"s, "\xEF\xBF\xBD\n"};
  for (size_t i = 0; i < chunks.size(); ++i) {
    a.Log(wid, "stdout", static_cast<int64_t>(i), chunks[i]);
    clock_.Advance(Seconds(1));  // listed in the order sent
  }
  EXPECT_FALSE(a.channel().closed());
  EXPECT_THAT(a.channel().Errors(), IsEmpty());
  auto p = workloads_->Logs(As(pia_), wid, {50, std::nullopt});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::vector<std::string> stored;
  for (const auto& c : p->items) stored.push_back(c.data);
  EXPECT_THAT(stored, ElementsAre("\n", "\n\n\n", "   ", "\t\r\n", "\v\f", "", "x\xEF\xBF\xBDy\n",
                                  "nul\xEF\xBF\xBD"
                                  "byte",
                                  "\xEF\xBF\xBD\n"));
  EXPECT_EQ(fleet().message_counts().log_bytes_replaced, 2);
  EXPECT_EQ(fleet().message_counts().refused["invalid_message"], 0);
}

TEST_P(WorkloadsTest, LogsAreCappedPerWorkload) {
  FakeAgent& a = NewAgent(pia_, 2);
  ASSERT_TRUE(a.Join());
  const std::string wid = Start(a, GpuIds(a.machine_id)[0], "running");
  // 4095 chunks stored already (the ids are ours: safe to write into the statement).
  ASSERT_TRUE(test_db()
                  .Exec("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n "
                        "WHERE i < 4094) INSERT INTO workload_logs (workload_id, stream, seq, "
                        "at, data) SELECT '" +
                        wid + "', 'stdout', i, " + std::to_string(ToUnixMicros(clock_.Now())) +
                        ", 'x' FROM n")
                  .ok());
  ASSERT_EQ(Number("SELECT COUNT(*) FROM workload_logs WHERE workload_id = ?", {wid}), 4095);
  clock_.Advance(Seconds(1));
  a.Log(wid, "stderr", 0, "the last one kept\n");
  a.Log(wid, "stderr", 1, "dropped\n");
  EXPECT_EQ(Number("SELECT COUNT(*) FROM workload_logs WHERE workload_id = ?", {wid}), 4096);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM workload_logs WHERE workload_id = ? AND stream = 'stderr'",
                   {wid}),
            1);
  EXPECT_FALSE(a.channel().closed());
  // Another workload has a cap of its own.
  const std::string other = Start(a, GpuIds(a.machine_id)[1], "pending");
  a.Log(other, "stdout", 0, "fine\n");
  EXPECT_EQ(Number("SELECT COUNT(*) FROM workload_logs WHERE workload_id = ?", {other}), 1);

  auto p = workloads_->Logs(As(pia_), wid, {5000, std::nullopt});
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(p->items, SizeIs(Workloads::kMaxLogPage));
}

// ---------------------------------------------------------------- visibility

TEST_P(WorkloadsTest, OnlyTheProviderAndAdminsSeeAWorkload) {
  FakeAgent& a = NewAgent(pia_, 1);
  FakeAgent& b = NewAgent(oscar_, 1);
  ASSERT_TRUE(a.Join());
  ASSERT_TRUE(b.Join());
  const std::string wa = MustCreate(pia_, Req(a.machine_id, GpuIds(a.machine_id))).id;
  const std::string wb = MustCreate(oscar_, Req(b.machine_id, GpuIds(b.machine_id))).id;
  for (const std::string& stranger : {oscar_, customer_}) {
    EXPECT_EQ(workloads_->Get(As(stranger), wa).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(workloads_->Logs(As(stranger), wa, {}).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(workloads_->Stop(As(stranger), wa).status().code(), StatusCode::kNotFound);
  }
  EXPECT_EQ(StateOf(wa), "pending") << "not stopped by a stranger";
  EXPECT_TRUE(workloads_->Get(As(pia_), wa).ok());
  EXPECT_EQ(workloads_->Get(As(pia_), wb).status().code(), StatusCode::kNotFound);

  auto list = [&](const std::string& user, const std::string& machine) {
    auto p = workloads_->List(As(user), machine, {});
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? Ids(*p) : std::vector<std::string>{};
  };
  EXPECT_THAT(list(pia_, ""), ElementsAre(wa));
  EXPECT_THAT(list(pia_, a.machine_id), ElementsAre(wa));
  EXPECT_THAT(list(pia_, b.machine_id), IsEmpty());
  EXPECT_THAT(list(oscar_, ""), ElementsAre(wb));
  EXPECT_THAT(list(customer_, ""), IsEmpty());
  EXPECT_THAT(list(admin_, ""), UnorderedElementsAre(wa, wb));
  EXPECT_THAT(list(admin_, b.machine_id), ElementsAre(wb));
}

TEST_P(WorkloadsTest, ARentalsWorkloadIsItsCustomersAndAProviderActsAsOneOnlyWithTheRole) {
  FakeAgent& a = NewAgent(pia_, 2);
  ASSERT_TRUE(a.Join());
  const std::vector<std::string> g = GpuIds(a.machine_id);
  const std::string own = MustCreate(pia_, Req(a.machine_id, {g[0]})).id;
  std::string rental;
  ASSERT_TRUE(db().Transact([&](store::Tx& tx) -> Status {
                    GPUNEX_ASSIGN_OR_RETURN(Workload w,
                                            workloads_->CreateInTx(tx, clock_.Now(), customer_,
                                                                   WorkloadPurpose::kRental,
                                                                   Req(a.machine_id, {g[1]})));
                    rental = w.id;
                    return Status::Ok();
                  })
                  .ok());
  // Pia's API key without the provider scope: her roles less the provider role.
  accounts::Principal key = As(pia_);
  key.via = accounts::Principal::Via::kApiKey;
  key.scopes = {"read", "write"};
  std::erase(key.user.roles, std::string(accounts::kRoleProvider));

  auto list = [&](const accounts::Principal& p) {
    auto page = workloads_->List(p, "", {});
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    return page.ok() ? Ids(*page) : std::vector<std::string>{};
  };
  EXPECT_THAT(list(As(pia_)), UnorderedElementsAre(own, rental));
  EXPECT_THAT(list(As(customer_)), ElementsAre(rental)) << "the rental, not Pia's own";
  auto on_machine = workloads_->List(As(customer_), a.machine_id, {});
  ASSERT_TRUE(on_machine.ok());
  EXPECT_THAT(Ids(*on_machine), IsEmpty()) << "a customer learns no machine by asking";
  EXPECT_THAT(list(key), IsEmpty()) << "a customer's key sees no provider's workload";
  EXPECT_THAT(list(As(admin_)), UnorderedElementsAre(own, rental));
  EXPECT_TRUE(workloads_->Get(As(customer_), rental).ok());
  EXPECT_TRUE(workloads_->Logs(As(customer_), rental, {}).ok());
  EXPECT_EQ(workloads_->Get(As(customer_), own).status().code(), StatusCode::kNotFound);
  for (const std::string& id : {own, rental}) {
    EXPECT_EQ(workloads_->Get(key, id).status().code(), StatusCode::kNotFound) << id;
    EXPECT_EQ(workloads_->Logs(key, id, {}).status().code(), StatusCode::kNotFound) << id;
    EXPECT_EQ(workloads_->Stop(key, id).status().code(), StatusCode::kNotFound) << id;
    EXPECT_EQ(workloads_->Get(As(oscar_), id).status().code(), StatusCode::kNotFound) << id;
  }
  EXPECT_EQ(StateOf(own), "pending") << "not stopped through the key";
}

// ---------------------------------------------------------------- reconciliation

TEST_P(WorkloadsTest, AStartedWorkloadMissingFromTheHelloIsLostAfterAGracePeriod) {
  FakeAgent& a = NewAgent(pia_, 5);
  ASSERT_TRUE(a.Join());
  const std::vector<std::string> g = GpuIds(a.machine_id);
  const std::string lost = Start(a, g[0], "running");
  const std::string pending = Start(a, g[1], "pending");
  const std::string alive = Start(a, g[2], "running");
  const std::string lost_starting = Start(a, g[3], "starting");
  const std::string ended_meanwhile = Start(a, g[4], "running");
  const std::string pending_cmd = StartCommand(a, pending)->command_id;

  a.Disconnect();
  clock_.Advance(Seconds(5));
  a.Connect();
  auto welcome = a.Hello({{"ctr-" + alive, alive, "running"},
                          {"stray", "wl_unknown", "running"},
                          {"unlabelled", "", "exited"}});
  ASSERT_TRUE(welcome);
  EXPECT_THAT(welcome->keep_workload_ids, UnorderedElementsAre(pending, alive));
  EXPECT_THAT(a.Commands(), SizeIs(1));
  EXPECT_EQ(a.Commands()[0].command_id, pending_cmd) << "the pending start is sent again";
  // What the agent queued while away arrives just after the welcome.
  a.Event(ended_meanwhile, "exited", 0);

  const int grace = std::max(5, 2 * fleet().options().heartbeat_interval_s);
  clock_.Advance(Seconds(grace) - std::chrono::microseconds(1));
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_EQ(StateOf(lost), "running") << "within the grace period";
  EXPECT_EQ(StateOf(lost_starting), "starting");
  clock_.Advance(std::chrono::microseconds(1));
  ASSERT_TRUE(fleet().SweepOnce().ok());
  for (const std::string& wid : {lost, lost_starting}) {
    Workload w = Get(wid);
    EXPECT_EQ(Name(w.state), "failed") << wid;
    EXPECT_EQ(w.end_reason, "container lost");
    EXPECT_EQ(w.end_party, EndParty::kProvider);
    EXPECT_EQ(w.end_cause, kCauseContainerLost);
    EXPECT_EQ(w.ended_at, clock_.Now());
  }
  EXPECT_EQ(StateOf(alive), "running");
  EXPECT_EQ(StateOf(pending), "pending");
  Workload meanwhile = Get(ended_meanwhile);
  EXPECT_EQ(Name(meanwhile.state), "exited");
  EXPECT_EQ(meanwhile.exit_code, 0);
  EXPECT_EQ(meanwhile.end_party, EndParty::kCustomer);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM workloads"), 5) << "no workload from a stray container";
  EXPECT_EQ(ListingOf(g[0]), "listed") << "the lost workload's GPU is free";
  EXPECT_EQ(ListingOf(g[2]), "rented");

  // A late event for a lost workload does not bring it back.
  a.Event(lost, "running");
  EXPECT_EQ(StateOf(lost), "failed");
  MustCreate(pia_, Req(a.machine_id, {g[0]}));
}

TEST_P(WorkloadsTest, ALostWorkloadIsNotForgottenWhenTheSweepFails) {
  FakeAgent& a = NewAgent(pia_, 2);
  ASSERT_TRUE(a.Join());
  const std::vector<std::string> g = GpuIds(a.machine_id);
  const std::string first = Start(a, g[0], "running");
  const std::string second = Start(a, g[1], "running");
  a.Disconnect();
  ASSERT_TRUE(a.Join());
  clock_.Advance(Seconds(std::max(5, 2 * fleet().options().heartbeat_interval_s)));
  faults().FailStatement("UPDATE workloads SET state = ?, exit_code", Unavailable("database down"));
  EXPECT_FALSE(fleet().SweepOnce().ok());
  EXPECT_EQ(faults().injected(), 1);
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_EQ(StateOf(first), "failed") << "retried by the next sweep";
  EXPECT_EQ(StateOf(second), "failed");
  EXPECT_EQ(Get(first).end_reason, "container lost");
}

// ---------------------------------------------------------------- listing

TEST_P(WorkloadsTest, AGpuInAnActiveWorkloadIsRented) {
  FakeAgent& a = NewAgent(pia_, 2);
  ASSERT_TRUE(a.Join());
  const std::vector<std::string> g = GpuIds(a.machine_id);
  const std::string wid = MustCreate(pia_, Req(a.machine_id, {g[0]})).id;
  EXPECT_EQ(ListingOf(g[0]), "rented") << "reserved from the start";
  EXPECT_EQ(Text("SELECT listing_note FROM machine_gpus WHERE id = ?", {g[0]}),
            "rented by a customer");
  EXPECT_EQ(ListingOf(g[1]), "listed");
  a.Event(wid, "running", std::nullopt, "", "ctr");
  EXPECT_EQ(ListingOf(g[0]), "rented");
  auto gpus_busy = [&]() {
    std::set<std::string> busy;
    Status st = test_db().db().Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(busy, GpusInActiveWorkloads(tx, a.machine_id));
      return Status::Ok();
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return busy;
  };
  EXPECT_EQ(gpus_busy(), std::set<std::string>{g[0]});

  clock_.Advance(Seconds(fleet().options().offline_after_s + 1));
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_EQ(ListingOf(g[0]), "machine_offline");
  a.Heartbeat();
  EXPECT_EQ(ListingOf(g[0]), "rented");

  a.Event(wid, "exited", 0);
  EXPECT_EQ(ListingOf(g[0]), "listed");
  EXPECT_THAT(gpus_busy(), IsEmpty());
}

GPUNEX_INSTANTIATE_BACKENDS(WorkloadsTest);

TEST(WorkloadStatesTest, AWorkloadMovesForwardUntilItEnds) {
  using enum WorkloadState;
  static_assert(WorkloadMayGo(kPending, kStarting));
  static_assert(WorkloadMayGo(kPending, kRunning));  // the agent's starting event was lost
  static_assert(WorkloadMayGo(kPending, kFailed));   // the agent refused the start
  static_assert(WorkloadMayGo(kStarting, kRunning));
  static_assert(WorkloadMayGo(kRunning, kExited));
  static_assert(WorkloadMayGo(kRunning, kFailed));
  static_assert(WorkloadMayGo(kRunning, kStopped));
  static_assert(!WorkloadMayGo(kRunning, kRunning));  // a repeated event
  static_assert(!WorkloadMayGo(kRunning, kStarting));
  static_assert(!WorkloadMayGo(kExited, kFailed));  // ended is for good
  static_assert(!WorkloadMayGo(kStopped, kExited));
  static_assert(!WorkloadMayGo(kFailed, kRunning));
  static_assert(IsActiveWorkloadState(kRunning) && !IsActiveWorkloadState(kExited));
}

// The one table of the states' names: each state has one, and reads back as itself.
TEST(WorkloadStatesTest, EachStateHasOneNameForTheWireAndTheDatabase) {
  using enum WorkloadState;
  for (WorkloadState s : {kPending, kStarting, kRunning, kExited, kFailed, kStopped}) {
    EXPECT_EQ(kWorkloadStateNames.Parse(Name(s)), s) << Name(s);
  }
  EXPECT_EQ(Name(kStopped), "stopped");
  EXPECT_EQ(kWorkloadStateNames.Parse("done"), std::nullopt);
  EXPECT_THROW(kWorkloadStateNames.ParseStored("Exited"), std::invalid_argument);
}

}  // namespace
}  // namespace gpunex::platform::fleet
