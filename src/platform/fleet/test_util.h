// Helpers for the fleet's tests (fleet_test.cc, workloads_test.cc): a fake agent channel
// that records what the platform sends, a fake agent that speaks the agent protocol to a
// Fleet through AgentSession::OnMessage (no HTTP, no WebSocket), and a fixture with a
// migrated throw-away database on either backend behind a FaultInjectingDatabase, a
// FakeClock and providers to own machines.
//
// Thread-safety: FakeChannel is safe to share (the fleet may send from a committing
// thread); FakeAgent and the fixture are used by the test's thread only.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/agent_protocol.h"
#include "common/thread_annotations.h"
#include "platform/accounts/accounts.h"
#include "platform/fleet/agent_session.h"
#include "platform/fleet/fleet.h"
#include "platform/testing/platform_test.h"

namespace gpunex::platform::fleet::testing {

// The transport of one connection as a recording: every text sent, every Close call.
// Send fails once Close was called, as a closed WebSocket's does.
class FakeChannel final : public AgentChannel {
 public:
  bool Send(std::string text) override EXCLUDES(mu_);
  void Close(int code, std::string reason) override EXCLUDES(mu_);

  std::vector<std::string> sent() const EXCLUDES(mu_);
  // The sent messages, parsed (a message that does not parse fails the test).
  std::vector<protocol::PlatformMessage> Messages() const;
  std::vector<protocol::Command> Commands() const;
  std::vector<protocol::Error> Errors() const;
  std::vector<std::pair<int, std::string>> closes() const EXCLUDES(mu_);
  bool closed() const { return !closes().empty(); }

 private:
  mutable Mutex mu_;
  std::vector<std::string> sent_ GUARDED_BY(mu_);
  std::vector<std::pair<int, std::string>> closes_ GUARDED_BY(mu_);
};

// One fake gpunex-agent on one fake machine: the machine key stays with the object, so
// Connect() + Hello() again is a reconnect of the same machine.
class FakeAgent {
 public:
  FakeAgent(Fleet& fleet, std::string provider_id, std::string token_id, int gpus = 2,
            bool emulated = true);
  ~FakeAgent();

  // A new connection (Fleet::Open with a fresh channel). The previous one, if any, is
  // closed first (its OnClose) unless `keep_old`: then it lingers, as a TCP connection
  // may after a network change.
  void Connect(bool keep_old = false);
  // Sends hello (machine_id: the one last welcomed unless given) and returns the welcome,
  // or nullopt when the platform answered anything else.
  std::optional<protocol::Welcome> Hello(std::vector<protocol::RunningContainer> containers = {},
                                         std::optional<std::string> machine_id = std::nullopt);
  // Connect() + Hello().
  std::optional<protocol::Welcome> Join(std::vector<protocol::RunningContainer> containers = {});
  // The connection goes away (the session's OnClose).
  void Disconnect();

  void Send(const protocol::AgentMessage& m);
  void SendText(const std::string& text);
  void Heartbeat(int64_t utilization_pct = 37, int64_t temperature_c = 55);
  void Ack(const std::string& command_id);
  // `data`: the result's string members (the agent protocol's `data` object).
  void Result(const std::string& command_id, bool ok, std::string error = "",
              const std::map<std::string, std::string>& data = {});
  void Event(const std::string& workload_id, const std::string& state,
             std::optional<int64_t> exit_code = std::nullopt, const std::string& reason = "",
             const std::string& container_id = "", const std::string& cause = "");
  void Log(const std::string& workload_id, const std::string& stream, int64_t seq,
           const std::string& data);

  protocol::Hello HelloMessage(std::vector<protocol::RunningContainer> containers = {}) const;

  FakeChannel& channel() { return *channel_; }
  const std::shared_ptr<FakeChannel>& channel_ptr() const { return channel_; }
  const std::shared_ptr<AgentSession>& session() const { return session_; }
  // The commands received on the current connection.
  std::vector<protocol::Command> Commands() const { return channel_->Commands(); }

  std::string provider_id;
  std::string token_id;
  std::string machine_key;
  std::string machine_id;  // from the last welcome
  bool emulated;
  protocol::Host host;
  std::vector<protocol::Gpu> gpus;
  std::string agent_version = "0.1.0-fake";
  int64_t seq = 0;

 private:
  Fleet& fleet_;
  std::shared_ptr<FakeChannel> channel_;
  std::shared_ptr<AgentSession> session_;
};

// A GPU uuid as NVML gives it ("GPU-" and a UUID; emulated: "GPU-emu-" and a UUID), made
// unique by `machine` and `index`.
std::string GpuUuid(int machine, int index, bool emulated);

// Every row of the fleet's tables (and the audit log), as text: what an agent or a request
// could change. Two equal snapshots mean nothing was stored in between.
std::string Snapshot(store::testing::TestDatabase& db);

// Registers a hello hook that reports every GPU model of the machine as priced, as
// pricing/ does for a provider that priced them, so that tests of the other listing rules
// need no prices. REQUIRES: before agents connect.
void PriceEveryModelOnHello(Fleet& fleet);

// The fixture: a migrated database on GetParam()'s backend, wrapped by faults(); a
// FakeClock; two providers (pia, oscar), a customer and an admin; a Fleet made by
// MakeFleet (defaults: emulated GPUs allowed, heartbeats every 10 s, Offline after 30 s,
// hello within 10 s).
class FleetTestBase : public platform::testing::PlatformTest {
 protected:
  void SetUp() override;
  void TearDown() override;

  FleetOptions DefaultOptions();
  // (Re)makes fleet() with `options` (clock set to the FakeClock). Unless
  // price_every_model_ is false, a hello hook reports every GPU model of the machine as
  // priced, as pricing/ does for a provider that priced them.
  void MakeFleet(FleetOptions options);
  Fleet& fleet() { return *fleet_; }
  store::testing::FaultInjectingDatabase& faults() { return faulty(); }

  // A user with a provider record; returns its id.
  std::string NewProvider(const std::string& name);
  // An agent token of the provider; returns its id.
  std::string NewAgentToken(const std::string& provider_id);

  // The agents made here are destroyed before the Fleet.
  FakeAgent& NewAgent(const std::string& provider_id, int gpus = 2, bool emulated = true);

  // The GPU ids of a machine, by index.
  std::vector<std::string> GpuIds(const std::string& machine_id);
  // machine_gpus.listing_state of one GPU.
  std::string ListingOf(const std::string& gpu_id);

  std::unique_ptr<accounts::Accounts> accounts_;
  std::unique_ptr<Fleet> fleet_;
  std::vector<std::unique_ptr<FakeAgent>> agents_;
  std::string pia_, oscar_, customer_, admin_;
  std::string pia_token_, oscar_token_;
  bool price_every_model_ = true;
};

}  // namespace gpunex::platform::fleet::testing
