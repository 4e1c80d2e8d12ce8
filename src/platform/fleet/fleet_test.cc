// Fleet and AgentSession without HTTP, on both store backends: a fake agent speaks the
// agent protocol through AgentSession::OnMessage, a FakeChannel records what the platform
// answers, a FakeClock moves time, SweepOnce runs the sweeper's pass. Covers the hello
// (registration, recognition, refusals), heartbeats and telemetry, Online/Offline with
// their intervals, hello timeouts, commands exactly once (after commit, re-sent until
// their result, results applied once, in-doubt commits), the listing of every GPU as its
// facts change, token revocation and replaced connections.
#include "platform/fleet/fleet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/json.h"
#include "platform/fleet/agent_session.h"
#include "platform/fleet/fleet_store.h"
#include "platform/fleet/test_util.h"

namespace gpunex::platform::fleet {
namespace {

using ::testing::ElementsAre;
using testing::FakeAgent;
using testing::FakeChannel;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using testing::Snapshot;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

std::vector<std::string> CommandIds(const std::vector<protocol::Command>& commands) {
  std::vector<std::string> out;
  for (const auto& c : commands) out.push_back(c.command_id);
  return out;
}

std::vector<std::string> ErrorCodes(const FakeChannel& ch) {
  std::vector<std::string> out;
  for (const auto& e : ch.Errors()) out.push_back(e.code);
  return out;
}

std::vector<std::pair<int, std::string>> Closed(int code, std::string reason) {
  return {{code, std::move(reason)}};
}

class FleetTest : public testing::FleetTestBase {
 protected:
  // Writes a stop_workload command for the machine in a transaction of its own.
  std::string Enqueue(const std::string& machine_id, const std::string& workload_id = "wl_test") {
    return EnqueueOn(fleet(), machine_id, workload_id);
  }
  std::string EnqueueOn(Fleet& f, const std::string& machine_id, const std::string& workload_id) {
    std::string id;
    Status st = f.db().Transact([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(
          id, f.EnqueueCommand(tx, clock_.Now(), machine_id, protocol::StopWorkload{workload_id}));
      return Status::Ok();
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return id;
  }
  std::string StoredCommandState(const std::string& id) {
    return Text("SELECT state FROM agent_commands WHERE id = ?", {id});
  }
  MachineDetail Detail(const std::string& machine_id) {
    auto d = fleet().GetMachine(As(admin_), machine_id);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? *d : MachineDetail{};
  }
  std::string StoredMachineStatus(const std::string& machine_id) {
    return Text("SELECT status FROM machines WHERE id = ?", {machine_id});
  }
  // Counts the calls of a result hook on stop_workload and writes an audit event in the
  // transaction that records the result: the hook's durable effect.
  void CountStopResults() {
    fleet().OnResult(
        protocol::kStopWorkload, [this](store::Tx& tx, Timestamp now, const std::string& machine_id,
                                        const protocol::Command& c, const protocol::Result& r) {
          ++hook_calls_;
          hook_seen_.push_back({machine_id, c, r});
          return accounts::Audit(tx, now, std::nullopt, "test.result_hook", c.command_id, "");
        });
  }
  int64_t HookEffects(const std::string& command_id) {
    return Number(
        "SELECT COUNT(*) FROM audit_events WHERE action = 'test.result_hook' AND subject = ?",
        {command_id});
  }

  struct Seen {
    std::string machine_id;
    protocol::Command command;
    protocol::Result result;
  };
  int hook_calls_ = 0;
  std::vector<Seen> hook_seen_;
};

// ---------------------------------------------------------------- hello

TEST_P(FleetTest, HelloRegistersTheMachine) {
  FleetOptions o = DefaultOptions();
  o.heartbeat_interval_s = 7;
  MakeFleet(o);
  std::vector<HelloFacts> hellos;
  fleet().OnHello([&](store::Tx&, Timestamp, const HelloFacts& f) {
    hellos.push_back(f);
    return Status::Ok();
  });
  FakeAgent& a = NewAgent(pia_);
  a.Connect();
  EXPECT_EQ(Number("SELECT COUNT(*) FROM machines"), 0) << "nothing before hello";
  const Timestamp t0 = clock_.Now();

  auto w = a.Hello();
  ASSERT_TRUE(w) << ::testing::PrintToString(a.channel().sent());
  const std::string mid = w->machine_id;
  EXPECT_THAT(mid, StartsWith("mch_"));
  EXPECT_EQ(w->heartbeat_interval_s, 7);
  EXPECT_THAT(w->keep_workload_ids, IsEmpty());
  EXPECT_THAT(a.channel().sent(), SizeIs(1)) << "only the welcome";
  EXPECT_FALSE(a.channel().closed());
  EXPECT_TRUE(a.session()->said_hello());
  EXPECT_EQ(a.session()->machine_id(), mid);
  EXPECT_TRUE(fleet().Connected(mid));

  MachineDetail d = Detail(mid);
  const Machine& m = d.machine;
  EXPECT_EQ(m.id, mid);
  EXPECT_EQ(m.provider_id, pia_);
  EXPECT_EQ(m.name, a.host.hostname);
  EXPECT_EQ(m.status, MachineStatus::kOnline);
  EXPECT_TRUE(m.emulated);
  EXPECT_EQ(m.agent_version, "0.1.0-fake");
  EXPECT_EQ(m.host.cpu_cores, 16);
  EXPECT_EQ(m.host.ram_mb, 65536);
  EXPECT_EQ(m.host.docker_version, "24.0.7");
  EXPECT_EQ(m.created_at, t0);
  EXPECT_EQ(m.last_seen, t0);
  EXPECT_EQ(m.status_since, t0);
  ASSERT_THAT(m.gpus, SizeIs(2));
  for (size_t i = 0; i < m.gpus.size(); ++i) {
    const MachineGpu& g = m.gpus[i];
    EXPECT_THAT(g.id, StartsWith("gpu_"));
    EXPECT_EQ(g.machine_id, mid);
    EXPECT_EQ(g.index, static_cast<int64_t>(i));
    EXPECT_EQ(g.uuid, a.gpus[i].uuid);
    EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(g.catalog_id, "h100-sxm-80gb");
    EXPECT_EQ(g.vram_mb, 81559);
    EXPECT_TRUE(g.emulated);
    EXPECT_TRUE(g.present);
    EXPECT_TRUE(g.enabled);
    EXPECT_EQ(g.info.driver_version, "550.54.15");
    EXPECT_EQ(g.info.pcie_width_max, 16);
    EXPECT_EQ(g.info.power_limit_w, 700);
    EXPECT_FALSE(g.telemetry);
    EXPECT_EQ(g.listing.state, listing::ListingState::kListed) << g.listing.note;
    EXPECT_EQ(g.listing_since, t0);
  }
  ASSERT_THAT(d.recent_intervals, SizeIs(1));
  EXPECT_EQ(d.recent_intervals[0].state, MachineStatus::kOnline);
  EXPECT_EQ(d.recent_intervals[0].started_at, t0);
  EXPECT_FALSE(d.recent_intervals[0].ended_at);
  EXPECT_TRUE(d.connected_here);
  EXPECT_THAT(Texts("SELECT kind FROM machine_events WHERE machine_id = ? ORDER BY id", {mid}),
              ElementsAre("registered", "inventory_changed", "online", "connected"));

  ASSERT_THAT(hellos, SizeIs(1));
  EXPECT_EQ(hellos[0].machine_id, mid);
  EXPECT_TRUE(hellos[0].registered);
  EXPECT_TRUE(hellos[0].inventory_changed);
  EXPECT_EQ(hellos[0].new_gpu_ids, GpuIds(mid));
  EXPECT_EQ(hellos[0].present_gpu_ids, GpuIds(mid));
}

TEST_P(FleetTest, AHelloWithTheSameKeyIsTheSameMachine) {
  std::vector<HelloFacts> hellos;
  fleet().OnHello([&](store::Tx&, Timestamp, const HelloFacts& f) {
    hellos.push_back(f);
    return Status::Ok();
  });
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string mid = a.machine_id;
  const std::vector<std::string> gpus = GpuIds(mid);
  ASSERT_THAT(gpus, SizeIs(2));

  // With its id, and with the key alone (an agent whose state lost the id).
  for (const std::string& claimed : {mid, std::string()}) {
    clock_.Advance(Seconds(5));
    a.Connect();
    auto w = a.Hello({}, claimed);
    ASSERT_TRUE(w) << "claimed " << claimed;
    EXPECT_EQ(w->machine_id, mid);
    EXPECT_TRUE(fleet().Connected(mid));
    ASSERT_FALSE(hellos.empty());
    EXPECT_FALSE(hellos.back().registered);
    EXPECT_FALSE(hellos.back().inventory_changed);
    EXPECT_THAT(hellos.back().new_gpu_ids, IsEmpty());
    EXPECT_EQ(hellos.back().present_gpu_ids, gpus);
  }
  EXPECT_EQ(Number("SELECT COUNT(*) FROM machines"), 1);
  EXPECT_EQ(GpuIds(mid), gpus);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM machine_events WHERE machine_id = ? "
                   "AND kind = 'disconnected'",
                   {mid}),
            2);

  // A GPU added: the inventory changed, the known GPUs keep their ids.
  protocol::Gpu extra = a.gpus[0];
  extra.index = 2;
  extra.uuid = testing::GpuUuid(0x7fff0000, 2, true);
  a.gpus.push_back(extra);
  a.Connect();
  ASSERT_TRUE(a.Hello());
  EXPECT_TRUE(hellos.back().inventory_changed);
  EXPECT_THAT(hellos.back().new_gpu_ids, SizeIs(1));
  const std::vector<std::string> now = GpuIds(mid);
  ASSERT_THAT(now, SizeIs(3));
  EXPECT_EQ(std::vector<std::string>(now.begin(), now.begin() + 2), gpus);
  EXPECT_EQ(hellos.back().new_gpu_ids[0], now[2]);
}

TEST_P(FleetTest, TheProvidersNameForAMachineStaysAcrossHellos) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string mid = a.machine_id;
  const std::string hostname = Detail(mid).machine.name;
  EXPECT_FALSE(hostname.empty()) << "named after its hostname when it registers";

  // Refused: nothing changes.
  const std::string before = Snapshot(test_db());
  EXPECT_EQ(fleet().RenameMachine(As(oscar_), mid, "mine").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(fleet().RenameMachine(As(customer_), mid, "mine").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(fleet().RenameMachine(As(admin_), mid, "mine").status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(fleet().RenameMachine(As(pia_), "mch_nosuch", "mine").status().code(),
            StatusCode::kNotFound);
  for (const std::string& bad :
       {std::string(), std::string("   "), std::string(kMaxMachineName + 1, 'n'),
        std::string("rack\n1"), std::string("rack\x01")}) {
    auto st = fleet().RenameMachine(As(pia_), mid, bad).status();
    EXPECT_EQ(st.code(), StatusCode::kValidationFailed) << bad;
    EXPECT_EQ(st.fields().count("name"), 1u) << bad;
  }
  EXPECT_EQ(Snapshot(test_db()), before);

  auto d = fleet().RenameMachine(As(pia_), mid, "  Rack 1, top  ");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->machine.name, "Rack 1, top") << "trimmed";
  EXPECT_TRUE(fleet().RenameMachine(As(pia_), mid, std::string(kMaxMachineName, 'n')).ok());
  ASSERT_TRUE(fleet().RenameMachine(As(pia_), mid, "Rack 1, top").ok());
  EXPECT_EQ(Number("SELECT COUNT(*) FROM audit_events WHERE action = 'machine.renamed' AND "
                   "subject = ?",
                   {mid}),
            3);

  // The agent reconnects with its hostname: the provider's name wins.
  clock_.Advance(Seconds(5));
  a.Connect();
  ASSERT_TRUE(a.Hello());
  EXPECT_EQ(Detail(mid).machine.name, "Rack 1, top");
}

TEST_P(FleetTest, ClaimsOnMachinesItDoesNotOwnAreRefused) {
  FakeAgent& mine = NewAgent(pia_);
  FakeAgent& spare = NewAgent(pia_);
  FakeAgent& theirs = NewAgent(oscar_);
  ASSERT_TRUE(mine.Join());
  ASSERT_TRUE(spare.Join());
  ASSERT_TRUE(theirs.Join());
  const std::string before = Snapshot(test_db());

  auto expect_forbidden = [&](FakeAgent& a, const std::string& claimed, const char* what) {
    a.Connect();
    EXPECT_FALSE(a.Hello({}, claimed)) << what;
    auto errors = a.channel().Errors();
    ASSERT_THAT(errors, SizeIs(1)) << what;
    EXPECT_EQ(errors[0].code, "forbidden") << what;
    EXPECT_FALSE(errors[0].message.empty()) << what;
    EXPECT_EQ(a.channel().closes(), Closed(1008, "forbidden")) << what;
    EXPECT_FALSE(a.session()->said_hello()) << what;
  };
  FakeAgent& fresh = NewAgent(pia_);
  expect_forbidden(fresh, theirs.machine_id, "another provider's machine id, a fresh key");
  FakeAgent& thief = NewAgent(pia_);
  thief.machine_key = theirs.machine_key;
  expect_forbidden(thief, "", "another provider's machine key");
  expect_forbidden(thief, theirs.machine_id, "another provider's machine key and id");
  FakeAgent& wrong_key = NewAgent(pia_);
  expect_forbidden(wrong_key, mine.machine_id, "its own machine id with a wrong key");
  FakeAgent& wrong_id = NewAgent(pia_);
  wrong_id.machine_key = mine.machine_key;
  expect_forbidden(wrong_id, spare.machine_id, "its own key with another of its machine ids");

  EXPECT_EQ(Snapshot(test_db()), before) << "nothing stored by refused hellos";
  for (FakeAgent* victim : {&mine, &spare, &theirs}) {
    EXPECT_TRUE(fleet().Connected(victim->machine_id));
    EXPECT_FALSE(victim->channel().closed());
  }
  EXPECT_EQ(Detail(theirs.machine_id).machine.provider_id, oscar_);
}

TEST_P(FleetTest, EmulatedGpusAreRefusedUnlessAllowed) {
  FleetOptions o = DefaultOptions();
  o.allow_emulated_gpus = false;
  MakeFleet(o);
  struct Case {
    bool machine, gpu;
  };
  for (Case c : {Case{true, true}, Case{true, false}, Case{false, true}}) {
    FakeAgent& a = NewAgent(pia_, 2, /*emulated=*/false);
    a.emulated = c.machine;
    for (auto& g : a.gpus) g.emulated = c.gpu;
    a.Connect();
    EXPECT_FALSE(a.Hello()) << c.machine << c.gpu;
    auto errors = a.channel().Errors();
    ASSERT_THAT(errors, SizeIs(1));
    EXPECT_EQ(errors[0].code, "refused");
    EXPECT_THAT(errors[0].message, HasSubstr("emulated"));
    EXPECT_EQ(a.channel().closes(), Closed(1008, "refused"));
  }
  EXPECT_EQ(Number("SELECT COUNT(*) FROM machines"), 0);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM machine_gpus"), 0);

  FakeAgent& real = NewAgent(pia_, 2, /*emulated=*/false);
  ASSERT_TRUE(real.Join());
  EXPECT_FALSE(Detail(real.machine_id).machine.emulated);
}

TEST_P(FleetTest, AProviderRegistersAtMostTheMachinesTheCapAllows) {
  FleetOptions o = DefaultOptions();
  o.max_machines_per_provider = 2;
  MakeFleet(o);
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  FakeAgent& b = NewAgent(pia_);
  ASSERT_TRUE(b.Join());
  FakeAgent& c = NewAgent(pia_);
  c.Connect();
  EXPECT_FALSE(c.Hello());
  auto errors = c.channel().Errors();
  ASSERT_THAT(errors, SizeIs(1));
  EXPECT_EQ(errors[0].code, "refused");
  EXPECT_THAT(errors[0].message, HasSubstr("already has 2 machines"));
  EXPECT_THAT(errors[0].message, HasSubstr("fleet.max_machines_per_provider"));
  EXPECT_EQ(c.channel().closes(), Closed(1008, "refused"));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM machines WHERE provider_id = ?", {pia_}), 2);
  // The machines it has reconnect as before, and another provider is not held back.
  a.Disconnect();
  EXPECT_TRUE(a.Join());
  FakeAgent& other = NewAgent(oscar_);
  EXPECT_TRUE(other.Join());
}

// A GPU counted as a catalog model must look like one to NVML: its name and VRAM.
TEST_P(FleetTest, AGpuThatDoesNotLookLikeItsModelIsNotListed) {
  FakeAgent& a = NewAgent(pia_, 3, /*emulated=*/false);
  a.gpus[1].name = "NVIDIA L4";   // but counted as an H100
  a.gpus[2].vram_mb = 40 * 1024;  // an "H100 80GB" with 40 GB
  ASSERT_TRUE(a.Join());
  const std::vector<std::string> gpus = GpuIds(a.machine_id);
  EXPECT_EQ(ListingOf(gpus[0]), "listed");
  EXPECT_EQ(ListingOf(gpus[1]), "unverified_model");
  EXPECT_EQ(Text("SELECT listing_note FROM machine_gpus WHERE id = ?", {gpus[1]}),
            "unverified model: it reports \"NVIDIA L4\" with 81559 MiB, which is not a NVIDIA "
            "H100 80GB HBM3 (80 GB)");
  EXPECT_EQ(ListingOf(gpus[2]), "unverified_model");
}

// Issue 24: the agent's network isolation check decides whether its GPUs are listed.
TEST_P(FleetTest, AMachineWhoseWorkloadsAreNotIsolatedIsNotListed) {
  FakeAgent& a = NewAgent(pia_, 2);
  a.host.network_isolation = protocol::NetworkIsolation{
      protocol::kNotIsolated,
      {protocol::kReachedWorkload, protocol::kReachedHost},
      "a container on a workload network reached another workload network's container at "
      "172.19.0.2:41000 and a listener on the host at 172.18.0.1:41000"};
  ASSERT_TRUE(a.Join());
  const std::vector<std::string> gpus = GpuIds(a.machine_id);
  for (const auto& g : gpus) {
    EXPECT_EQ(ListingOf(g), "network_not_isolated");
    EXPECT_EQ(Text("SELECT listing_note FROM machine_gpus WHERE id = ?", {g}),
              "network not isolated: a workload can reach another workload and the host's "
              "services; fix: turn Docker's iptables rules on (\"iptables\": true, the "
              "default); run iptables -I INPUT -i gpxwl+ -j REJECT on the host; then restart "
              "gpunex-agent (docs/trust.md)");
  }
  // What the agent found is kept with the host facts, for the provider to read.
  auto m = fleet().GetMachine(As(pia_), a.machine_id);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->machine.host.network_isolation, a.host.network_isolation);

  // The provider fixes the host; the agent's next check says so between hellos.
  protocol::NetworkIsolation fixed{protocol::kIsolated, {}, "reached neither"};
  a.Send(fixed);
  EXPECT_FALSE(a.channel().closed());
  for (const auto& g : gpus) EXPECT_EQ(ListingOf(g), "listed");
  m = fleet().GetMachine(As(pia_), a.machine_id);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->machine.host.network_isolation, fixed);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM machine_events WHERE machine_id = ? AND kind = "
                   "'network_isolation'",
                   {a.machine_id}),
            1);
  a.Send(fixed);  // the same again changes nothing
  EXPECT_EQ(Number("SELECT COUNT(*) FROM machine_events WHERE machine_id = ? AND kind = "
                   "'network_isolation'",
                   {a.machine_id}),
            1);

  // A check that could not tell delists again, saying why.
  a.Send(protocol::NetworkIsolation{protocol::kIsolationUnverified, {}, "the engine timed out"});
  EXPECT_EQ(ListingOf(gpus[0]), "network_not_isolated");
  EXPECT_EQ(Text("SELECT listing_note FROM machine_gpus WHERE id = ?", {gpus[0]}),
            "network isolation could not be checked: the engine timed out");

  // An agent older than the check says nothing of it: not listed either.
  a.host.network_isolation.reset();
  a.Disconnect();
  ASSERT_TRUE(a.Join());
  EXPECT_EQ(ListingOf(gpus[0]), "network_not_isolated");
  EXPECT_THAT(Text("SELECT listing_note FROM machine_gpus WHERE id = ?", {gpus[0]}),
              HasSubstr("older than the check"));
  // No engine answers (it had one: its hello named a Docker version): delisted, the note
  // saying what to start, until a check passes again.
  a.Send(protocol::NetworkIsolation{protocol::kIsolationNoEngine, {}, "no socket"});
  EXPECT_EQ(ListingOf(gpus[0]), "engine_down");
  EXPECT_EQ(Text("SELECT listing_note FROM machine_gpus WHERE id = ?", {gpus[0]}),
            listing::kEngineDownNote);
  a.Send(fixed);
  EXPECT_EQ(ListingOf(gpus[0]), "listed");
}

TEST_P(FleetTest, AMalformedIsolationReportIsRefusedAloneAndChangesNothing) {
  FakeAgent& a = NewAgent(pia_, 1);
  ASSERT_TRUE(a.Join());
  const std::string before = Snapshot(test_db());
  // not_isolated must say what was reached.
  a.SendText(R"({"type":"network_isolation","state":"not_isolated","reached":[],"detail":""})");
  EXPECT_EQ(fleet().message_counts().refused["invalid_message"], 1);
  EXPECT_FALSE(a.channel().closed()) << "after hello, a bad message is refused alone";
  EXPECT_EQ(Snapshot(test_db()), before);
}

TEST_P(FleetTest, AGpuReportedTwiceIsRefused) {
  FakeAgent& a = NewAgent(pia_, 3);
  a.gpus[2].uuid = a.gpus[0].uuid;
  const std::string before = Snapshot(test_db());
  a.Connect();
  EXPECT_FALSE(a.Hello());
  auto errors = a.channel().Errors();
  ASSERT_THAT(errors, SizeIs(1));
  EXPECT_EQ(errors[0].code, "refused");
  EXPECT_THAT(errors[0].message, HasSubstr(a.gpus[0].uuid));
  EXPECT_EQ(a.channel().closes(), Closed(1008, "refused"));
  EXPECT_EQ(Snapshot(test_db()), before);
}

TEST_P(FleetTest, ProtocolViolationsBeforeHelloCloseTheConnectionAndChangeNothing) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  a.Disconnect();
  const std::string before = Snapshot(test_db());
  clock_.Advance(Seconds(1));

  a.Connect();
  a.Heartbeat();  // before hello
  EXPECT_THAT(ErrorCodes(a.channel()), ElementsAre("protocol_error"));
  EXPECT_EQ(a.channel().closes(), Closed(1008, "protocol_error"));
  EXPECT_FALSE(a.Hello()) << "a refused connection handles nothing more";

  a.Connect();
  a.SendText("{not json");
  EXPECT_THAT(ErrorCodes(a.channel()), ElementsAre("invalid_message"));
  EXPECT_EQ(a.channel().closes(), Closed(1008, "invalid_message"));
  EXPECT_EQ(Snapshot(test_db()), before);
  // No session was up: nothing is counted as refused alone.
  EXPECT_EQ(fleet().message_counts().refused["invalid_message"], 0);
}

// Issue 24: after the hello the connection carries every rental on the machine, so one
// bad message (a blank log line refused as "required" took them all down 81 times in 80 s)
// is refused alone: nothing changes, it is counted, and the session stays up, sending and
// receiving as before. No error message is sent: the agent ends its session on one.
TEST_P(FleetTest, AfterHelloABadMessageIsRefusedAloneAndCounted) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string joined = Snapshot(test_db());
  const size_t sent = a.channel().sent().size();
  clock_.Advance(Seconds(1));
  auto refused = [&](const std::string& reason) {
    return fleet().message_counts().refused[reason];
  };

  a.SendText("{not json");
  a.SendText(R"({"type": "launch_missiles"})");
  a.SendText(R"({"type": "logs", "workload_id": "w", "stream": "stdin", "seq": 1, "data": ""})");
  a.SendText(R"({"type": "heartbeat", "seq": 9.223372036854775807e18, "gpus": []})");
  a.SendText(R"({"type": "logs", "workload_id": "w", "stream": "stdout", "seq": 1, "data": ")" +
             std::string(protocol::kMaxLogChunk + 1, 'x') + "\"}");
  EXPECT_EQ(refused("invalid_message"), 5);
  a.Send(a.HelloMessage());  // a second hello
  EXPECT_EQ(refused("protocol_error"), 1);
  // A heartbeat naming a GPU the hello did not report: its transaction rolled back.
  const std::string reported = a.gpus[1].uuid;
  a.gpus[1].uuid = testing::GpuUuid(0x7ffe0000, 1, true);
  a.Heartbeat();
  EXPECT_EQ(refused("invalid_message"), 6);
  EXPECT_EQ(Snapshot(test_db()), joined) << "a refused message changes nothing";
  EXPECT_THAT(ErrorCodes(a.channel()), IsEmpty());
  EXPECT_FALSE(a.channel().closed());
  EXPECT_EQ(a.channel().sent().size(), sent);

  // The session is up: a ping is answered, a heartbeat is stored, commands still go out.
  a.Send(protocol::Ping{7});
  ASSERT_EQ(a.channel().sent().size(), sent + 1);
  a.gpus[1].uuid = reported;
  const Timestamp at = clock_.Now();
  a.Heartbeat();
  EXPECT_EQ(Detail(a.machine_id).machine.last_seen, at);
  const std::string cid = Enqueue(a.machine_id);
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(cid));
  EXPECT_FALSE(a.channel().closed());
  EXPECT_EQ(refused("forbidden"), 0);
}

TEST_P(FleetTest, PingIsAnsweredWithPong) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  a.Send(protocol::Ping{42});
  auto messages = a.channel().Messages();
  ASSERT_THAT(messages, SizeIs(2));
  auto* pong = std::get_if<protocol::Pong>(&messages[1]);
  ASSERT_TRUE(pong);
  EXPECT_EQ(pong->id, 42);
}

// ---------------------------------------------------------------- heartbeats

TEST_P(FleetTest, HeartbeatsStoreTelemetryAndPerMinuteRows) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string mid = a.machine_id;
  const std::vector<std::string> gpus = GpuIds(mid);
  clock_.Advance(Seconds(1));
  const Timestamp t1 = clock_.Now();
  a.Heartbeat(37, 55);
  EXPECT_FALSE(a.channel().closed());

  Machine m = Detail(mid).machine;
  EXPECT_EQ(m.last_seen, t1);
  for (const MachineGpu& g : m.gpus) {
    ASSERT_TRUE(g.telemetry) << g.id;
    EXPECT_EQ(g.telemetry->uuid, "");
    EXPECT_EQ(g.telemetry->utilization_pct, 37);
    EXPECT_EQ(g.telemetry->memory_used_mb, 1024);
    EXPECT_EQ(g.telemetry->temperature_c, 55);
    EXPECT_DOUBLE_EQ(g.telemetry->power_w, 250.5);
    EXPECT_EQ(g.telemetry->sm_clock_mhz, 1980);
    EXPECT_EQ(g.telemetry_at, t1);
  }
  const int64_t minute = ToUnixMicros(t1) / 60'000'000;
  auto row = [&](const std::string& gpu, int64_t at_minute) {
    auto rows = test_db().Query(
        "SELECT samples, utilization_sum, temperature_max, memory_used_max, throttled_samples, "
        "power_sum FROM gpu_telemetry_minutes WHERE gpu_id = ? AND minute = ?",
        {gpu, at_minute});
    EXPECT_TRUE(rows.ok() && rows->size() == 1) << rows.status().ToString();
    std::vector<int64_t> out;
    if (!rows.ok() || rows->size() != 1) return out;
    const store::Row& r = (*rows)[0];
    for (const char* column : {"samples", "utilization_sum", "temperature_max", "memory_used_max",
                               "throttled_samples"}) {
      out.push_back(r[column].Int());
    }
    out.push_back(static_cast<int64_t>(r["power_sum"].Real() * 10));
    return out;
  };
  EXPECT_THAT(row(gpus[0], minute), ElementsAre(1, 37, 55, 1024, 0, 2505));

  clock_.Advance(Seconds(10));  // the same minute
  a.Heartbeat(50, 70);
  clock_.Advance(Seconds(10));
  // Thermal throttling counts; a reason that is neither thermal nor power does not.
  protocol::Heartbeat h;
  h.seq = ++a.seq;
  for (const auto& g : a.gpus) {
    protocol::GpuSample s;
    s.uuid = g.uuid;
    s.utilization_pct = 10;
    s.temperature_c = 40;
    s.memory_used_mb = 2048;
    s.power_w = 100;
    s.throttle_reasons = {g.index == 0 ? "hw_thermal_slowdown" : "applications_clocks_setting"};
    h.gpus.push_back(s);
  }
  a.Send(h);
  EXPECT_THAT(row(gpus[0], minute), ElementsAre(3, 97, 70, 2048, 1, 6010));
  EXPECT_THAT(row(gpus[1], minute), ElementsAre(3, 97, 70, 2048, 0, 6010));
  m = Detail(mid).machine;
  EXPECT_EQ(m.gpus[0].telemetry->utilization_pct, 10) << "the latest sample";
  EXPECT_EQ(m.gpus[0].telemetry->throttle_reasons, std::vector<std::string>{"hw_thermal_slowdown"});

  clock_.Advance(Seconds(60));
  a.Heartbeat(5, 30);
  EXPECT_THAT(row(gpus[0], minute + 1), ElementsAre(1, 5, 30, 1024, 0, 2505));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM gpu_telemetry_minutes WHERE gpu_id = ?", {gpus[1]}), 2);
}

// ---------------------------------------------------------------- Online / Offline

TEST_P(FleetTest, OfflineAfterMissedHeartbeatsWithIntervalsThatChain) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string mid = a.machine_id;
  const std::string g0 = GpuIds(mid)[0];
  const Timestamp t0 = clock_.Now();

  clock_.Advance(Seconds(fleet().options().offline_after_s));
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_EQ(StoredMachineStatus(mid), "online")
      << "a heartbeat-free period of offline_after_s is not more";
  clock_.Advance(std::chrono::microseconds(1));
  ASSERT_TRUE(fleet().SweepOnce().ok());
  const Timestamp t_off = clock_.Now();
  EXPECT_EQ(StoredMachineStatus(mid), "offline");
  EXPECT_EQ(ListingOf(g0), "machine_offline");
  EXPECT_TRUE(fleet().Connected(mid)) << "the connection stays open";
  MachineDetail d = Detail(mid);
  EXPECT_EQ(d.machine.status_since, t_off);
  ASSERT_THAT(d.recent_intervals, SizeIs(2));
  EXPECT_EQ(d.recent_intervals[1].state, MachineStatus::kOnline);
  EXPECT_EQ(d.recent_intervals[1].started_at, t0);
  EXPECT_EQ(d.recent_intervals[1].ended_at, t_off);
  EXPECT_EQ(d.recent_intervals[1].end_reason, IntervalEndReason::kMissedHeartbeats);
  EXPECT_EQ(d.recent_intervals[0].state, MachineStatus::kOffline);
  EXPECT_EQ(d.recent_intervals[0].started_at, t_off);
  EXPECT_FALSE(d.recent_intervals[0].ended_at);
  clock_.Advance(Seconds(60));
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_THAT(Detail(mid).recent_intervals, SizeIs(2)) << "offline stays one interval";

  // A heartbeat on the same connection brings it back.
  const Timestamp t_back = clock_.Now();
  a.Heartbeat();
  EXPECT_EQ(StoredMachineStatus(mid), "online");
  EXPECT_EQ(ListingOf(g0), "listed");
  d = Detail(mid);
  ASSERT_THAT(d.recent_intervals, SizeIs(3));
  EXPECT_EQ(d.recent_intervals[1].ended_at, t_back);
  EXPECT_EQ(d.recent_intervals[1].end_reason, IntervalEndReason::kHeartbeatResumed);
  EXPECT_EQ(d.recent_intervals[0].state, MachineStatus::kOnline);
  EXPECT_EQ(d.recent_intervals[0].started_at, t_back);

  // The agent goes away: Offline once the time passes; then it comes back.
  clock_.Advance(Seconds(3));
  a.Disconnect();
  EXPECT_FALSE(fleet().Connected(mid));
  EXPECT_EQ(StoredMachineStatus(mid), "online") << "disconnecting is not Offline yet";
  clock_.Advance(Seconds(fleet().options().offline_after_s + 1));
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_EQ(StoredMachineStatus(mid), "offline");
  clock_.Advance(Seconds(100));
  ASSERT_TRUE(a.Join());
  EXPECT_EQ(StoredMachineStatus(mid), "online");

  d = Detail(mid);
  std::vector<MachineInterval> ivs(d.recent_intervals.rbegin(), d.recent_intervals.rend());
  std::vector<std::string> states;
  for (const auto& iv : ivs) states.emplace_back(Name(iv.state));
  EXPECT_THAT(states, ElementsAre("online", "offline", "online", "offline", "online"));
  for (size_t i = 0; i + 1 < ivs.size(); ++i) {
    ASSERT_TRUE(ivs[i].ended_at) << i;
    EXPECT_EQ(*ivs[i].ended_at, ivs[i + 1].started_at) << "no gap, no overlap at " << i;
    EXPECT_TRUE(ivs[i].end_reason) << i;
  }
  EXPECT_FALSE(ivs.back().ended_at);
  EXPECT_EQ(ivs.back().started_at, clock_.Now());
  EXPECT_EQ(ivs[3].end_reason, IntervalEndReason::kAgentConnected);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM machine_intervals WHERE machine_id = ? "
                   "AND ended_at IS NULL",
                   {mid}),
            1);
}

TEST_P(FleetTest, AConnectionThatNeverSaysHelloIsClosedAfterTheTimeLimit) {
  FakeAgent& silent = NewAgent(pia_);
  FakeAgent& talker = NewAgent(pia_);
  silent.Connect();
  talker.Connect();
  clock_.Advance(Seconds(5));
  ASSERT_TRUE(talker.Hello());
  clock_.Advance(Seconds(fleet().options().hello_timeout_s - 5));
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_FALSE(silent.channel().closed()) << "exactly hello_timeout_s is still in time";
  clock_.Advance(Seconds(1));
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_THAT(ErrorCodes(silent.channel()), ElementsAre("protocol_error"));
  EXPECT_EQ(silent.channel().closes(), Closed(1008, "protocol_error"));
  EXPECT_FALSE(talker.channel().closed());
  // A hello that arrives after the refusal is not acted on.
  EXPECT_FALSE(silent.Hello());
  EXPECT_EQ(Number("SELECT COUNT(*) FROM machines"), 1);
}

// ---------------------------------------------------------------- commands exactly once

TEST_P(FleetTest, ACommandIsSentOnlyAfterItsTransactionCommits) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string mid = a.machine_id;
  clock_.Advance(Seconds(1));

  std::string cid;
  Status st = fleet().db().Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(cid, fleet().EnqueueCommand(tx, clock_.Now(), mid,
                                                        protocol::StopWorkload{"wl_after_commit"}));
    EXPECT_THAT(a.Commands(), IsEmpty()) << "sent before the commit";
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto commands = a.Commands();
  ASSERT_THAT(commands, SizeIs(1));
  EXPECT_EQ(commands[0].command_id, cid);
  EXPECT_THAT(cid, StartsWith("cmd_"));
  EXPECT_EQ(commands[0].kind, protocol::kStopWorkload);
  auto payload = protocol::ParseStopWorkload(commands[0].payload);
  ASSERT_TRUE(payload.ok()) << payload.status().ToString();
  EXPECT_EQ(payload->workload_id, "wl_after_commit");
  EXPECT_EQ(StoredCommandState(cid), "sent");
  EXPECT_EQ(Number("SELECT sent_at FROM agent_commands WHERE id = ?", {cid}),
            ToUnixMicros(clock_.Now()));

  // Rolled back: neither stored nor sent.
  st = fleet().db().Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(
        fleet()
            .EnqueueCommand(tx, clock_.Now(), mid, protocol::StopWorkload{"wl_rolled_back"})
            .status());
    return FailedPrecondition("the decision was undone");
  });
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(cid));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_commands"), 1);

  // The sweeper does not send it again on the same connection.
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(cid));
}

TEST_P(FleetTest, CommandsAreResentOnEveryConnectUntilTheirResultArrives) {
  CountStopResults();
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string mid = a.machine_id;
  const std::string c1 = Enqueue(mid, "wl_one");
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(c1));
  a.Ack(c1);
  EXPECT_EQ(StoredCommandState(c1), "acked");
  a.Disconnect();

  // Queued while the agent is away: stored, sent to nobody.
  const std::string c2 = Enqueue(mid, "wl_two");
  EXPECT_EQ(StoredCommandState(c2), "pending");
  clock_.Advance(Seconds(3));
  a.Connect();
  ASSERT_TRUE(a.Hello());
  auto messages = a.channel().Messages();
  ASSERT_THAT(messages, SizeIs(3));
  EXPECT_TRUE(std::holds_alternative<protocol::Welcome>(messages[0])) << "the welcome comes first";
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(c1, c2)) << "in id order";

  a.Result(c1, true);
  EXPECT_EQ(StoredCommandState(c1), "done");
  EXPECT_EQ(hook_calls_, 1);
  clock_.Advance(Seconds(3));
  ASSERT_TRUE(a.Join());
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(c2)) << "a done command is not sent again";
  a.Ack(c2);
  a.Result(c2, false, "no such workload");
  EXPECT_EQ(StoredCommandState(c2), "done");
  EXPECT_EQ(Number("SELECT ok FROM agent_commands WHERE id = ?", {c2}), 0);
  clock_.Advance(Seconds(3));
  ASSERT_TRUE(a.Join());
  EXPECT_THAT(a.Commands(), IsEmpty());
  EXPECT_EQ(hook_calls_, 2);
  EXPECT_EQ(HookEffects(c1), 1);
  EXPECT_EQ(HookEffects(c2), 1);
}

// A start_workload's registry credentials (issue 25) are never stored: they go with the
// command on every send until its result arrives, then are forgotten; an hour later they
// are forgotten unanswered.
TEST_P(FleetTest, RegistryCredentialsGoWithTheCommandAndAreNeverStored) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string mid = a.machine_id;
  auto enqueue = [&](const std::string& workload_id) {
    protocol::StartWorkload w;
    w.workload_id = workload_id;
    w.image = "registry.example.com/team/private:1";
    w.memory_mb = 1024;
    w.cpus = 1;
    w.pids_limit = 256;
    w.scratch_mb = 1024;
    w.registry_auth = protocol::RegistryCredentials{"robot", "s3cret-pa55"};
    std::string cid;
    Status st = fleet().db().Transact([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(cid, fleet().EnqueueCommand(tx, clock_.Now(), mid, w));
      return Status::Ok();
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return cid;
  };
  auto sent_auth = [&](const std::string& cid) -> std::optional<protocol::RegistryCredentials> {
    for (const protocol::Command& c : a.Commands()) {
      if (c.command_id != cid) continue;
      auto parsed = protocol::ParseStartWorkload(c.payload);
      EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
      return parsed.ok() ? parsed->registry_auth : std::nullopt;
    }
    ADD_FAILURE() << cid << " was not sent";
    return std::nullopt;
  };
  const std::string cid = enqueue("wl_private");
  EXPECT_EQ(sent_auth(cid), (protocol::RegistryCredentials{"robot", "s3cret-pa55"}));
  const std::string stored = Text("SELECT payload FROM agent_commands WHERE id = ?", {cid});
  EXPECT_THAT(stored, Not(HasSubstr("s3cret-pa55")));
  EXPECT_THAT(stored, Not(HasSubstr("registry_auth")));

  // Sent again on a reconnect before the result: still with them.
  a.Disconnect();
  a.Connect();
  ASSERT_TRUE(a.Hello());
  EXPECT_EQ(sent_auth(cid), (protocol::RegistryCredentials{"robot", "s3cret-pa55"}));
  // The result arrives: forgotten, so a later send (the result lost on the way back)
  // goes without them.
  a.Result(cid, true, "", {{"workload_id", "wl_private"}});
  ASSERT_TRUE(
      test_db().Exec("UPDATE agent_commands SET state = 'pending' WHERE id = ?", {cid}).ok());
  a.Connect();
  ASSERT_TRUE(a.Hello());
  EXPECT_EQ(sent_auth(cid), std::nullopt);

  // Unanswered for an hour: forgotten all the same.
  const std::string late = enqueue("wl_late");
  EXPECT_TRUE(sent_auth(late).has_value());
  clock_.Advance(kRegistryCredentialsTtl + Seconds(1));
  a.Connect();
  ASSERT_TRUE(a.Hello());
  EXPECT_EQ(sent_auth(late), std::nullopt);
}

// The clock of the instance that sent a command may be ahead of the one the agent
// reconnects to (several gpunexd on one database), or the wall clock may step back: the
// command must still be sent on the new connection.
TEST_P(FleetTest, ACommandIsResentOnReconnectEvenWhenTheClockIsBehind) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string cid = Enqueue(a.machine_id);
  ASSERT_THAT(CommandIds(a.Commands()), ElementsAre(cid));
  a.Disconnect();
  // The same instant (a coarse clock), then a clock behind the one that sent it.
  a.Connect();
  ASSERT_TRUE(a.Hello());
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(cid)) << "reconnected at the same instant";
  clock_.Advance(-Seconds(2));
  a.Connect();
  ASSERT_TRUE(a.Hello());
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(cid)) << "reconnected with a clock behind";
  // Still once per connection.
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(cid));
}

TEST_P(FleetTest, ARepeatedResultIsAppliedOnce) {
  CountStopResults();
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string cid = Enqueue(a.machine_id, "wl_once");
  clock_.Advance(Seconds(2));
  const Timestamp t_done = clock_.Now();
  a.Result(cid, true, "", {{"container_id", "abc"}});
  EXPECT_EQ(StoredCommandState(cid), "done");
  EXPECT_EQ(Number("SELECT done_at FROM agent_commands WHERE id = ?", {cid}), ToUnixMicros(t_done));
  EXPECT_EQ(Number("SELECT ok FROM agent_commands WHERE id = ?", {cid}), 1);
  ASSERT_THAT(hook_seen_, SizeIs(1));
  EXPECT_EQ(hook_seen_[0].machine_id, a.machine_id);
  EXPECT_EQ(hook_seen_[0].command.command_id, cid);
  EXPECT_EQ(hook_seen_[0].command.kind, protocol::kStopWorkload);
  EXPECT_EQ(protocol::ParseStopWorkload(hook_seen_[0].command.payload)->workload_id, "wl_once");
  EXPECT_TRUE(hook_seen_[0].result.ok);
  EXPECT_EQ(ToJsonText(hook_seen_[0].result.data), R"({"container_id":"abc"})");

  const std::string result = Text("SELECT result FROM agent_commands WHERE id = ?", {cid});
  EXPECT_THAT(result, HasSubstr("abc"));
  const std::string done = Snapshot(test_db());
  clock_.Advance(Seconds(2));
  a.Result(cid, false, "late duplicate");  // even a different one
  a.Ack(cid);
  EXPECT_EQ(Snapshot(test_db()), done);
  clock_.Advance(Seconds(2));
  ASSERT_TRUE(a.Join());
  EXPECT_THAT(a.Commands(), IsEmpty());
  a.Result(cid, true);  // after a reconnect
  EXPECT_EQ(hook_calls_, 1);
  EXPECT_EQ(HookEffects(cid), 1);
  EXPECT_EQ(StoredCommandState(cid), "done");
  EXPECT_EQ(Number("SELECT done_at FROM agent_commands WHERE id = ?", {cid}), ToUnixMicros(t_done));
  EXPECT_EQ(Number("SELECT ok FROM agent_commands WHERE id = ?", {cid}), 1);
  EXPECT_EQ(Text("SELECT result FROM agent_commands WHERE id = ?", {cid}), result);
}

TEST_P(FleetTest, AckAndResultOfAnotherMachinesCommandAreIgnored) {
  CountStopResults();
  FakeAgent& a = NewAgent(pia_);
  FakeAgent& b = NewAgent(oscar_);
  FakeAgent& c = NewAgent(pia_);  // same provider, other machine
  ASSERT_TRUE(a.Join());
  ASSERT_TRUE(b.Join());
  ASSERT_TRUE(c.Join());
  const std::string cid = Enqueue(a.machine_id);
  const std::string before = Snapshot(test_db());
  for (FakeAgent* intruder : {&b, &c}) {
    intruder->Ack(cid);
    intruder->Result(cid, false, "forged");
    EXPECT_FALSE(intruder->channel().closed());
  }
  EXPECT_EQ(Snapshot(test_db()), before);
  EXPECT_EQ(hook_calls_, 0);
  EXPECT_EQ(StoredCommandState(cid), "sent");
  a.Ack(cid);
  EXPECT_EQ(StoredCommandState(cid), "acked");
}

TEST_P(FleetTest, ACommandQueuedByAnotherInstanceIsDeliveredByTheSweep) {
  Fleet other(faults(), DefaultOptions());  // a second gpunexd on the same database
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string here = Enqueue(a.machine_id, "wl_here");  // sent, not answered
  const std::string cid = EnqueueOn(other, a.machine_id, "wl_elsewhere");
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(here))
      << "the other instance has no session for it";
  EXPECT_EQ(StoredCommandState(cid), "pending");
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(here, cid)) << "each once on this connection";
  EXPECT_EQ(StoredCommandState(cid), "sent");
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(here, cid));
}

// Commands written on one thread (each sent after its commit) while another runs the
// sweeper's pass and the connection handles heartbeats: each goes out once.
TEST_P(FleetTest, CommandsQueuedWhileTheSweeperRunsAreSentOnceEach) {
  Fleet other(faults(), DefaultOptions());
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string mid = a.machine_id;
  constexpr int kCommands = 12;
  std::vector<std::string> ids(kCommands);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < kCommands; ++i) {
      // Half through this instance (sent after commit), half through another (the sweep).
      ids[i] = EnqueueOn(i % 2 ? other : fleet(), mid, "wl_" + std::to_string(i));
    }
    done = true;
  });
  std::thread sweeper([&] {
    while (!done) EXPECT_TRUE(fleet().SweepOnce().ok());
    EXPECT_TRUE(fleet().SweepOnce().ok());
  });
  for (int i = 0; i < kCommands; ++i) {
    a.Heartbeat();
    EXPECT_TRUE(fleet().Connected(mid));
  }
  writer.join();
  sweeper.join();
  ASSERT_TRUE(fleet().SweepOnce().ok());
  std::vector<std::string> sent = CommandIds(a.Commands());
  std::vector<std::string> want = ids;
  std::sort(sent.begin(), sent.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(sent, want) << "every command once";
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_commands WHERE state = 'sent'"), kCommands);
  EXPECT_FALSE(a.channel().closed());
}

TEST_P(FleetTest, ACommandWhoseCommitIsInDoubtIsDeliveredOnceIfItCommitted) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string mid = a.machine_id;
  auto enqueue = [&](const std::string& wid) {
    return fleet().db().Transact([&](store::Tx& tx) {
      return fleet().EnqueueCommand(tx, clock_.Now(), mid, protocol::StopWorkload{wid}).status();
    });
  };
  faults().FailCommit("INSERT INTO agent_commands", /*committed=*/true);
  EXPECT_EQ(enqueue("wl_committed").code(), StatusCode::kOutcomeUnknown);
  EXPECT_THAT(a.Commands(), IsEmpty()) << "no after-commit effect for an unknown outcome";
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_commands WHERE state = 'pending'"), 1);
  ASSERT_TRUE(fleet().SweepOnce().ok());
  ASSERT_THAT(a.Commands(), SizeIs(1));
  EXPECT_EQ(protocol::ParseStopWorkload(a.Commands()[0].payload)->workload_id, "wl_committed");

  faults().FailCommit("INSERT INTO agent_commands", /*committed=*/false);
  EXPECT_EQ(enqueue("wl_not_committed").code(), StatusCode::kOutcomeUnknown);
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_THAT(a.Commands(), SizeIs(1));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_commands"), 1);
  EXPECT_EQ(faults().injected(), 2);
}

TEST_P(FleetTest, AResultWhoseCommitIsInDoubtButCommittedIsAppliedOnce) {
  CountStopResults();
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string cid = Enqueue(a.machine_id);
  faults().FailCommit("UPDATE agent_commands SET state = 'done'", /*committed=*/true);
  a.Result(cid, true);
  EXPECT_EQ(faults().injected(), 1);
  EXPECT_FALSE(a.channel().closed()) << "a store failure is not the agent's fault";
  EXPECT_EQ(StoredCommandState(cid), "done");
  EXPECT_EQ(HookEffects(cid), 1);

  // The agent got no word either way; after a reconnect it sends the result again.
  clock_.Advance(Seconds(2));
  ASSERT_TRUE(a.Join());
  EXPECT_THAT(a.Commands(), IsEmpty()) << "done: not sent again";
  a.Result(cid, true);
  EXPECT_EQ(hook_calls_, 1);
  EXPECT_EQ(HookEffects(cid), 1);
}

TEST_P(FleetTest, AResultWhoseCommitIsInDoubtAndRolledBackIsAppliedWhenResent) {
  CountStopResults();
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string cid = Enqueue(a.machine_id);
  faults().FailCommit("UPDATE agent_commands SET state = 'done'", /*committed=*/false);
  a.Result(cid, true);
  EXPECT_EQ(faults().injected(), 1);
  EXPECT_EQ(StoredCommandState(cid), "sent");
  EXPECT_EQ(HookEffects(cid), 0) << "the hook's writes rolled back with the result";

  clock_.Advance(Seconds(2));
  ASSERT_TRUE(a.Join());
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(cid)) << "not done: sent again";
  a.Result(cid, true);  // answered from the agent's record
  a.Result(cid, true);
  EXPECT_EQ(StoredCommandState(cid), "done");
  EXPECT_EQ(HookEffects(cid), 1);
  EXPECT_EQ(hook_calls_, 2) << "once rolled back, once committed";
}

TEST_P(FleetTest, AHeartbeatThatHitsAConflictIsRetried) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string mid = a.machine_id;
  const std::vector<std::string> gpus = GpuIds(mid);
  clock_.Advance(Seconds(1));
  const int inserts = faults().Count("INSERT INTO gpu_telemetry_minutes");
  faults().FailStatement("INSERT INTO gpu_telemetry_minutes", Aborted("serialization failure"));
  a.Heartbeat(42);
  EXPECT_EQ(faults().injected(), 1);
  EXPECT_EQ(faults().Count("INSERT INTO gpu_telemetry_minutes") - inserts, 3)
      << "one failed attempt, then both GPUs again";
  EXPECT_FALSE(a.channel().closed());
  EXPECT_EQ(Detail(mid).machine.last_seen, clock_.Now());
  for (const std::string& g : gpus) {
    EXPECT_EQ(Number("SELECT samples FROM gpu_telemetry_minutes WHERE gpu_id = ?", {g}), 1)
        << "counted once";
    EXPECT_EQ(Number("SELECT utilization_sum FROM gpu_telemetry_minutes WHERE gpu_id = ?", {g}),
              42);
  }

  // A database that went away: nothing stored, the connection stays; the next one counts.
  clock_.Advance(Seconds(1));
  const Timestamp t_seen = clock_.Now();
  faults().FailStatement("UPDATE machines SET last_seen_at", Unavailable("database down"));
  clock_.Advance(Seconds(1));
  a.Heartbeat(42);
  EXPECT_FALSE(a.channel().closed());
  EXPECT_EQ(Number("SELECT samples FROM gpu_telemetry_minutes WHERE gpu_id = ?", {gpus[0]}), 1);
  EXPECT_NE(Detail(mid).machine.last_seen, clock_.Now());
  EXPECT_LT(Detail(mid).machine.last_seen, t_seen);
  a.Heartbeat(42);
  EXPECT_EQ(Detail(mid).machine.last_seen, clock_.Now());
  EXPECT_EQ(Number("SELECT samples FROM gpu_telemetry_minutes WHERE gpu_id = ?", {gpus[0]}), 2);
}

// ---------------------------------------------------------------- listing

TEST_P(FleetTest, TheListingFollowsEveryFactChange) {
  FleetOptions o = DefaultOptions();
  o.list_after_benchmark = true;
  MakeFleet(o);
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string mid = a.machine_id;
  const std::vector<std::string> g = GpuIds(mid);
  EXPECT_EQ(ListingOf(g[0]), "awaiting_first_benchmark");
  EXPECT_EQ(ListingOf(g[1]), "awaiting_first_benchmark");
  EXPECT_EQ(Text("SELECT listing_note FROM machine_gpus WHERE id = ?", {g[0]}),
            "awaiting its first benchmark");

  auto report = [&](std::map<std::string, BenchmarkFacts> facts) {
    clock_.Advance(Seconds(1));
    Status st = fleet().db().Transact(
        [&](store::Tx& tx) { return ReportBenchmarkFacts(tx, clock_.Now(), mid, facts); });
    EXPECT_TRUE(st.ok()) << st.ToString();
  };
  report(
      {{g[0], {listing::BenchmarkVerdict::kPassed, "", false}}, {g[1], {std::nullopt, "", true}}});
  EXPECT_EQ(ListingOf(g[0]), "listed");
  EXPECT_THAT(Texts("SELECT listing_note FROM machine_gpus WHERE id = ?", {g[0]}),
              ElementsAre("NULL"));
  EXPECT_EQ(ListingOf(g[1]), "awaiting_first_benchmark") << "being measured, never passed";
  EXPECT_EQ(Number("SELECT benchmarking FROM machine_gpus WHERE id = ?", {g[1]}), 1);
  report({{g[1], {listing::BenchmarkVerdict::kPassed, "", true}}});
  EXPECT_EQ(ListingOf(g[1]), "benchmarking");
  report(
      {{g[1], {listing::BenchmarkVerdict::kFailed, "benchmark: fp16 below the minimum", false}}});
  EXPECT_EQ(ListingOf(g[1]), "failed_benchmark");
  MachineGpu g1 = Detail(mid).machine.gpus[1];
  EXPECT_EQ(g1.listing.note, "benchmark: fp16 below the minimum");
  EXPECT_EQ(g1.benchmark_verdict, listing::BenchmarkVerdict::kFailed);
  EXPECT_EQ(g1.listing_since, clock_.Now());
  // No verdict: the stored one and its note stay.
  report({{g[1], {std::nullopt, "", false}}});
  EXPECT_EQ(ListingOf(g[1]), "failed_benchmark");
  EXPECT_EQ(Detail(mid).machine.gpus[1].listing.note, "benchmark: fp16 below the minimum");
  EXPECT_EQ(Detail(mid).machine.gpus[1].listing_since, g1.listing_since)
      << "an unchanged decision keeps its time";
  Status unknown = fleet().db().Transact([&](store::Tx& tx) {
    return ReportBenchmarkFacts(tx, clock_.Now(), mid, {{"gpu_nosuch", {}}});
  });
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound);

  // The provider designates GPUs; nobody else may.
  const std::string before = Snapshot(test_db());
  EXPECT_EQ(fleet().SetGpuEnabled(As(oscar_), mid, g[0], false).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(fleet().SetGpuEnabled(As(customer_), mid, g[0], false).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(fleet().SetGpuEnabled(As(admin_), mid, g[0], false).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(fleet().SetGpuEnabled(As(pia_), mid, "gpu_nosuch", false).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(Snapshot(test_db()), before);
  auto d = fleet().SetGpuEnabled(As(pia_), mid, g[0], false);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_FALSE(d->machine.gpus[0].enabled);
  EXPECT_EQ(d->machine.gpus[0].listing.state, listing::ListingState::kDisabledByProvider);
  EXPECT_EQ(ListingOf(g[0]), "disabled_by_provider");
  EXPECT_EQ(
      Number("SELECT COUNT(*) FROM audit_events WHERE action = 'gpu.disabled' AND subject = ?",
             {g[0]}),
      1);

  // Offline: the machine's state, except where the provider's word comes first.
  clock_.Advance(Seconds(fleet().options().offline_after_s + 1));
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_EQ(ListingOf(g[0]), "disabled_by_provider");
  EXPECT_EQ(ListingOf(g[1]), "machine_offline");
  a.Heartbeat();
  EXPECT_EQ(ListingOf(g[1]), "failed_benchmark");
  ASSERT_TRUE(fleet().SetGpuEnabled(As(pia_), mid, g[0], true).ok());
  EXPECT_EQ(ListingOf(g[0]), "listed");

  // A GPU missing from the next hello.
  std::vector<protocol::Gpu> all = a.gpus;
  a.gpus.pop_back();
  ASSERT_TRUE(a.Join());
  EXPECT_EQ(ListingOf(g[1]), "missing_from_machine");
  EXPECT_EQ(Number("SELECT present FROM machine_gpus WHERE id = ?", {g[1]}), 0);
  EXPECT_EQ(ListingOf(g[0]), "listed");
  a.gpus = all;
  ASSERT_TRUE(a.Join());
  EXPECT_EQ(ListingOf(g[1]), "failed_benchmark");
}

TEST_P(FleetTest, RefreshAllListingsDecidesEveryGpuAgainFromItsFacts) {
  FakeAgent& a = NewAgent(pia_);
  FakeAgent& b = NewAgent(oscar_);
  ASSERT_TRUE(a.Join());
  ASSERT_TRUE(b.Join());
  const std::string ga = GpuIds(a.machine_id)[0];
  const std::string gb = GpuIds(b.machine_id)[1];
  ASSERT_TRUE(fleet().SetGpuEnabled(As(pia_), a.machine_id, ga, false).ok());
  // More machines than one batch, offline, whose GPUs an older release called listed.
  ASSERT_TRUE(test_db()
                  .Exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                        "WHERE i < 205) INSERT INTO machines (id, provider_id, key_hash, name, "
                        "status, emulated, agent_version, host, inventory_hash, created_at, "
                        "last_seen_at, status_since) SELECT 'mch_bulk_' || i, ?, 'key_' || i, "
                        "'bulk', 'offline', 0, '0.1.0', '{}', '', 0, 0, 0 FROM n",
                        {oscar_})
                  .ok());
  ASSERT_TRUE(test_db()
                  .Exec("INSERT INTO machine_gpus (id, machine_id, idx, uuid, name, catalog_id, "
                        "vram_mb, emulated, present, enabled, info, created_at, "
                        "listing_state) SELECT 'gpu_' || id, id, 0, 'GPU-' || id, 'bulk', "
                        "'other', 1, 0, 1, 1, '{}', 0, 'listed' FROM machines WHERE name = 'bulk'")
                  .ok());
  ASSERT_TRUE(test_db()
                  .Exec("UPDATE machine_gpus SET listing_state = 'machine_offline' "
                        "WHERE id IN (?, ?)",
                        {ga, gb})
                  .ok());

  clock_.Advance(Seconds(1));
  ASSERT_TRUE(fleet().RefreshAllListings().ok());
  EXPECT_EQ(ListingOf(ga), "disabled_by_provider");
  EXPECT_EQ(ListingOf(gb), "listed");
  EXPECT_EQ(Number("SELECT listing_since FROM machine_gpus WHERE id = ?", {gb}),
            ToUnixMicros(clock_.Now()));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM machine_gpus WHERE listing_state = 'machine_offline'"),
            205);
  EXPECT_EQ(ListingOf("gpu_mch_bulk_1"), "machine_offline");
  EXPECT_EQ(ListingOf("gpu_mch_bulk_99"), "machine_offline") << "beyond the first batch";
}

// ---------------------------------------------------------------- sessions

TEST_P(FleetTest, VisibilityOfMachines) {
  FakeAgent& a = NewAgent(pia_);
  FakeAgent& b = NewAgent(oscar_);
  ASSERT_TRUE(a.Join());
  ASSERT_TRUE(b.Join());
  auto ids = [](const Page<Machine>& p) {
    std::vector<std::string> out;
    for (const auto& m : p.items) out.push_back(m.id);
    return out;
  };
  auto mine = fleet().ListMachines(As(pia_), {});
  ASSERT_TRUE(mine.ok());
  EXPECT_THAT(ids(*mine), ElementsAre(a.machine_id));
  auto all = fleet().ListMachines(As(admin_), {});
  ASSERT_TRUE(all.ok());
  std::vector<std::string> both = {a.machine_id, b.machine_id};
  std::sort(both.begin(), both.end());
  EXPECT_EQ(ids(*all), both);
  auto first = fleet().ListMachines(As(admin_), {1, std::nullopt});
  ASSERT_TRUE(first.ok());
  EXPECT_THAT(ids(*first), ElementsAre(both[0]));
  ASSERT_TRUE(first->next);
  auto second = fleet().ListMachines(As(admin_), {1, first->next});
  ASSERT_TRUE(second.ok());
  EXPECT_THAT(ids(*second), ElementsAre(both[1]));
  EXPECT_FALSE(second->next);
  EXPECT_EQ(fleet().ListMachines(As(customer_), {}).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(fleet().GetMachine(As(oscar_), a.machine_id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(fleet().GetMachine(As(customer_), a.machine_id).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(fleet().GetMachine(As(pia_), a.machine_id).ok());
}

TEST_P(FleetTest, MachinesFilteredByProviderAndStatusAndCountedPerProvider) {
  FakeAgent& a = NewAgent(pia_);
  FakeAgent& b = NewAgent(oscar_);
  FakeAgent& c = NewAgent(oscar_, 3);
  ASSERT_TRUE(a.Join());
  ASSERT_TRUE(b.Join());
  ASSERT_TRUE(c.Join());
  // c's heartbeats stop: the sweep finds it offline.
  c.Disconnect();
  clock_.Advance(Seconds(fleet().options().offline_after_s) + std::chrono::microseconds(1));
  a.Heartbeat();
  b.Heartbeat();
  ASSERT_TRUE(fleet().SweepOnce().ok());
  ASSERT_EQ(StoredMachineStatus(c.machine_id), "offline");
  ASSERT_EQ(StoredMachineStatus(b.machine_id), "online");
  auto ids = [](const StatusOr<Page<Machine>>& p) {
    std::vector<std::string> out;
    if (p.ok()) {
      for (const auto& m : p->items) out.push_back(m.id);
    }
    return out;
  };
  EXPECT_THAT(ids(fleet().ListMachines(As(admin_), {}, oscar_)),
              UnorderedElementsAre(b.machine_id, c.machine_id));
  EXPECT_THAT(ids(fleet().ListMachines(As(admin_), {}, oscar_, MachineStatus::kOffline)),
              ElementsAre(c.machine_id));
  EXPECT_THAT(ids(fleet().ListMachines(As(admin_), {}, "", MachineStatus::kOnline)),
              UnorderedElementsAre(a.machine_id, b.machine_id));
  EXPECT_THAT(ids(fleet().ListMachines(As(pia_), {}, pia_)), ElementsAre(a.machine_id));
  // A provider names only itself.
  auto other = fleet().ListMachines(As(pia_), {}, oscar_);
  EXPECT_EQ(other.status().code(), StatusCode::kValidationFailed);
  EXPECT_TRUE(other.status().fields().contains("provider_id"));

  auto gpus_of = [&](const std::string& machine_id) {
    auto m = fleet().GetMachine(As(admin_), machine_id);
    return m.ok() ? static_cast<int64_t>(m->machine.gpus.size()) : -1;
  };
  std::map<std::string, MachineCounts> counts;
  ASSERT_TRUE(db().Read([&](store::Tx& tx) -> Status {
                    GPUNEX_ASSIGN_OR_RETURN(counts, MachineCountsOf(tx, {pia_, oscar_, customer_}));
                    return Status::Ok();
                  })
                  .ok());
  ASSERT_EQ(counts.size(), 2u);  // the customer has no machine
  EXPECT_EQ(counts[pia_].machines, 1);
  EXPECT_EQ(counts[pia_].online, 1);
  EXPECT_EQ(counts[pia_].gpus, gpus_of(a.machine_id));
  EXPECT_EQ(counts[oscar_].machines, 2);
  EXPECT_EQ(counts[oscar_].online, 1);
  EXPECT_EQ(counts[oscar_].gpus, gpus_of(b.machine_id) + gpus_of(c.machine_id));
}

TEST_P(FleetTest, RevokingATokenEndsItsSessions) {
  const std::string other_token = NewAgentToken(pia_);
  FakeAgent& a = NewAgent(pia_);
  FakeAgent& b = NewAgent(pia_);
  b.token_id = other_token;
  FakeAgent& silent = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  ASSERT_TRUE(b.Join());
  silent.Connect();

  fleet().CloseSessionsForToken(pia_token_);
  for (FakeAgent* doomed : {&a, &silent}) {
    EXPECT_THAT(ErrorCodes(doomed->channel()), ElementsAre("token_revoked"));
    EXPECT_EQ(doomed->channel().closes(), Closed(1008, "token_revoked"));
  }
  EXPECT_FALSE(b.channel().closed());
  // What the refused session still sends is not acted on.
  const std::string before = Snapshot(test_db());
  clock_.Advance(Seconds(1));
  a.Heartbeat();
  EXPECT_EQ(Snapshot(test_db()), before);
  a.Disconnect();
  EXPECT_FALSE(fleet().Connected(a.machine_id));
  EXPECT_TRUE(fleet().Connected(b.machine_id));
}

TEST_P(FleetTest, ASecondConnectionForTheSameMachineReplacesTheFirst) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::string mid = a.machine_id;
  const std::shared_ptr<FakeChannel> old_channel = a.channel_ptr();
  const std::shared_ptr<AgentSession> old_session = a.session();
  const std::string c1 = Enqueue(mid);  // sent on the old connection, never answered
  ASSERT_THAT(CommandIds(old_channel->Commands()), ElementsAre(c1));

  clock_.Advance(Seconds(1));
  a.Connect(/*keep_old=*/true);
  auto w = a.Hello({}, "");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->machine_id, mid);
  EXPECT_THAT(ErrorCodes(*old_channel), ElementsAre("replaced"));
  EXPECT_EQ(old_channel->closes(), Closed(1008, "replaced"));
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(c1)) << "sent again on the new connection";

  // The old connection's close comes late: the new one stays the machine's.
  old_session->OnClose();
  EXPECT_TRUE(fleet().Connected(mid));
  const std::string c2 = Enqueue(mid);
  EXPECT_THAT(CommandIds(a.Commands()), ElementsAre(c1, c2));
  EXPECT_THAT(CommandIds(old_channel->Commands()), ElementsAre(c1));
  EXPECT_FALSE(a.channel().closed());
  EXPECT_EQ(Number("SELECT COUNT(*) FROM machines"), 1);
}

GPUNEX_INSTANTIATE_BACKENDS(FleetTest);

// pending → sent → acked → done, only forward (an ack may overtake the mark of the send).
TEST(CommandStatesTest, ACommandOnlyMovesForward) {
  using enum CommandState;
  static_assert(CommandMayGo(kPending, kSent));
  static_assert(CommandMayGo(kPending, kAcked));
  static_assert(CommandMayGo(kSent, kAcked));
  static_assert(CommandMayGo(kSent, kDone));
  static_assert(CommandMayGo(kAcked, kDone));
  static_assert(!CommandMayGo(kAcked, kSent));  // sent again after a reconnect
  static_assert(!CommandMayGo(kDone, kDone));   // a repeated result
  static_assert(!CommandMayGo(kDone, kPending));
}

// The tables of names: each value has one, and reads back as itself.
TEST(CommandStatesTest, EachStateAndStatusHasOneNameThatReadsBack) {
  using enum CommandState;
  for (CommandState s : {kPending, kSent, kAcked, kDone}) {
    EXPECT_EQ(kCommandStateNames.Parse(Name(s)), s) << Name(s);
  }
  EXPECT_EQ(Name(kAcked), "acked");
  EXPECT_EQ(Name(MachineStatus::kOnline), "online");
  EXPECT_EQ(Name(MachineStatus::kOffline), "offline");
  EXPECT_EQ(kMachineStatusNames.Parse("offline"), MachineStatus::kOffline);
  EXPECT_THROW(kMachineStatusNames.ParseStored("Online"), std::invalid_argument);
}

}  // namespace
}  // namespace gpunex::platform::fleet
