#include "platform/fleet/test_util.h"

#include <cstdio>

#include "common/ids.h"
#include "platform/providers/providers.h"

namespace gpunex::platform::fleet::testing {

// ---------------------------------------------------------------- FakeChannel

bool FakeChannel::Send(std::string text) {
  MutexLock lock(&mu_);
  if (!closes_.empty()) return false;
  sent_.push_back(std::move(text));
  return true;
}

void FakeChannel::Close(int code, std::string reason) {
  MutexLock lock(&mu_);
  closes_.emplace_back(code, std::move(reason));
}

std::vector<std::string> FakeChannel::sent() const {
  MutexLock lock(&mu_);
  return sent_;
}

std::vector<std::pair<int, std::string>> FakeChannel::closes() const {
  MutexLock lock(&mu_);
  return closes_;
}

std::vector<protocol::PlatformMessage> FakeChannel::Messages() const {
  std::vector<protocol::PlatformMessage> out;
  for (const std::string& text : sent()) {
    auto m = protocol::ParsePlatformMessage(text);
    if (!m.ok()) {
      ADD_FAILURE() << "the platform sent a message that does not parse: " << text << ": "
                    << m.status().ToString();
      continue;
    }
    out.push_back(std::move(*m));
  }
  return out;
}

std::vector<protocol::Command> FakeChannel::Commands() const {
  std::vector<protocol::Command> out;
  for (auto& m : Messages()) {
    if (auto* c = std::get_if<protocol::Command>(&m)) out.push_back(std::move(*c));
  }
  return out;
}

std::vector<protocol::Error> FakeChannel::Errors() const {
  std::vector<protocol::Error> out;
  for (auto& m : Messages()) {
    if (auto* e = std::get_if<protocol::Error>(&m)) out.push_back(std::move(*e));
  }
  return out;
}

// ---------------------------------------------------------------- FakeAgent

namespace {

int NextMachineNumber() {
  static int n = 0;
  return ++n;
}

}  // namespace

std::string GpuUuid(int machine, int index, bool emulated) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%08x-1111-2222-3333-%012x", emulated ? "GPU-emu-" : "GPU-",
                static_cast<unsigned>(machine), static_cast<unsigned>(index));
  return buf;
}

FakeAgent::FakeAgent(Fleet& fleet, std::string provider, std::string token, int n_gpus, bool emu)
    : provider_id(std::move(provider)),
      token_id(std::move(token)),
      machine_key("mk-" + NewId("key") + "-0123456789abcdef"),
      emulated(emu),
      fleet_(fleet) {
  const int number = NextMachineNumber();
  host.hostname = "rig-" + std::to_string(number);
  host.cpu_model = "Fake EPYC 9654";
  host.os = "Ubuntu 22.04";
  host.kernel = "6.5.0";
  host.docker_version = "24.0.7";
  host.cpu_cores = 16;
  host.ram_mb = 65536;
  host.disk_total_mb = 4'000'000;
  host.disk_free_mb = 3'500'000;
  // As the real agent says once its check has passed (agent/isolation/isolation_check.h).
  host.network_isolation = protocol::NetworkIsolation{protocol::kIsolated, {}, "fake: isolated"};
  for (int i = 0; i < n_gpus; ++i) {
    protocol::Gpu g;
    g.index = i;
    g.uuid = GpuUuid(number, i, emulated);
    g.name = "NVIDIA H100 80GB HBM3";
    g.catalog_id = "h100-sxm-80gb";
    g.vram_mb = 81559;
    g.driver_version = "550.54.15";
    g.cuda_driver_version = "12.4";
    g.pcie_gen_max = g.pcie_gen_current = 5;
    g.pcie_width_max = g.pcie_width_current = 16;
    g.power_limit_w = 700;
    g.emulated = emulated;
    gpus.push_back(g);
  }
}

FakeAgent::~FakeAgent() {
  if (session_) session_->OnClose();
}

void FakeAgent::Connect(bool keep_old) {
  if (session_ && !keep_old) session_->OnClose();
  channel_ = std::make_shared<FakeChannel>();
  session_ = fleet_.Open(provider_id, token_id, channel_, "192.0.2.1:4242");
}

protocol::Hello FakeAgent::HelloMessage(std::vector<protocol::RunningContainer> containers) const {
  protocol::Hello h;
  h.agent_version = agent_version;
  h.machine_id = machine_id;
  h.machine_key = machine_key;
  h.emulated = emulated;
  h.host = host;
  h.gpus = gpus;
  h.containers = std::move(containers);
  return h;
}

std::optional<protocol::Welcome> FakeAgent::Hello(
    std::vector<protocol::RunningContainer> containers, std::optional<std::string> claimed_id) {
  protocol::Hello h = HelloMessage(std::move(containers));
  if (claimed_id) h.machine_id = *claimed_id;
  const size_t before = channel_->sent().size();
  Send(h);
  auto messages = channel_->Messages();
  if (messages.size() <= before) return std::nullopt;
  auto* w = std::get_if<protocol::Welcome>(&messages[before]);
  if (!w) return std::nullopt;
  machine_id = w->machine_id;
  return *w;
}

std::optional<protocol::Welcome> FakeAgent::Join(
    std::vector<protocol::RunningContainer> containers) {
  Connect();
  return Hello(std::move(containers));
}

void FakeAgent::Disconnect() {
  if (session_) session_->OnClose();
}

void FakeAgent::Send(const protocol::AgentMessage& m) { SendText(protocol::Serialize(m)); }

void FakeAgent::SendText(const std::string& text) { session_->OnMessage(text); }

void FakeAgent::Heartbeat(int64_t utilization_pct, int64_t temperature_c) {
  protocol::Heartbeat h;
  h.seq = ++seq;
  for (const auto& g : gpus) {
    protocol::GpuSample s;
    s.uuid = g.uuid;
    s.utilization_pct = utilization_pct;
    s.memory_used_mb = 1024;
    s.temperature_c = temperature_c;
    s.power_w = 250.5;
    s.sm_clock_mhz = 1980;
    h.gpus.push_back(s);
  }
  Send(h);
}

void FakeAgent::Ack(const std::string& command_id) { Send(protocol::Ack{command_id}); }

void FakeAgent::Result(const std::string& command_id, bool ok, std::string error,
                       const std::map<std::string, std::string>& data) {
  json::object members;
  for (const auto& [name, value] : data) members[name] = value;
  Send(protocol::Result{command_id, ok, std::move(error), std::move(members)});
}

void FakeAgent::Event(const std::string& workload_id, const std::string& state,
                      std::optional<int64_t> exit_code, const std::string& reason,
                      const std::string& container_id, const std::string& cause) {
  Send(protocol::WorkloadEvent{workload_id, state, exit_code, reason, container_id, cause});
}

void FakeAgent::Log(const std::string& workload_id, const std::string& stream, int64_t s,
                    const std::string& data) {
  Send(protocol::Logs{workload_id, stream, s, data});
}

// ---------------------------------------------------------------- Snapshot

namespace {

std::string CellText(const store::Value& v) {
  if (std::holds_alternative<std::nullptr_t>(v)) return "NULL";
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return std::to_string(*d);
  return "'" + std::get<std::string>(v) + "'";
}

}  // namespace

std::string Snapshot(store::testing::TestDatabase& db) {
  std::string out;
  for (const char* table :
       {"machines", "machine_gpus", "machine_intervals", "machine_events", "gpu_telemetry_minutes",
        "agent_commands", "workloads", "workload_logs", "audit_events"}) {
    auto rows = db.Query(std::string("SELECT * FROM ") + table + " ORDER BY 1, 2, 3");
    EXPECT_TRUE(rows.ok()) << table << ": " << rows.status().ToString();
    if (!rows.ok()) continue;
    out += std::string(table) + ":\n";
    for (const auto& r : *rows) {
      // SELECT * of one table: each column's name is its own.
      const char* sep = "  ";
      for (const std::string& name : r.names()) {
        out += sep + CellText(r[name].value());
        sep = ", ";
      }
      out += "\n";
    }
  }
  return out;
}

// ---------------------------------------------------------------- FleetTestBase

void FleetTestBase::SetUp() {
  PlatformTest::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  accounts_ = std::make_unique<accounts::Accounts>(db(), FastAccountsOptions());
  auto admin = accounts_->CreateAdmin("admin@example.com", "admin-password-1", "Ada Admin");
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  admin_ = admin->id;
  auto customer =
      accounts_->SignUp({"carl@example.com", "customer-password", "Carl Customer"}, "192.0.2.9");
  ASSERT_TRUE(customer.ok()) << customer.status().ToString();
  customer_ = customer->id;
  pia_ = NewProvider("Pia");
  oscar_ = NewProvider("Oscar");
  pia_token_ = NewAgentToken(pia_);
  oscar_token_ = NewAgentToken(oscar_);
  MakeFleet(DefaultOptions());
}

void FleetTestBase::TearDown() {
  agents_.clear();
  fleet_.reset();
}

FleetOptions FleetTestBase::DefaultOptions() {
  FleetOptions o;
  o.allow_emulated_gpus = true;
  o.list_after_benchmark = false;
  o.heartbeat_interval_s = 10;
  o.offline_after_s = 30;
  o.hello_timeout_s = 10;
  o.clock = &clock_;
  return o;
}

void FleetTestBase::MakeFleet(FleetOptions options) {
  agents_.clear();
  fleet_.reset();
  options.clock = &clock_;
  fleet_ = std::make_unique<Fleet>(faulty(), options);
  // The fixture's providers price every model they have (pricing/ reports this fact in
  // gpunexd), so that the listing rules under test are the others.
  if (price_every_model_) PriceEveryModelOnHello(*fleet_);
}

void PriceEveryModelOnHello(Fleet& fleet) {
  fleet.OnHello([](store::Tx& tx, Timestamp now, const HelloFacts& hello) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Machine> m, LoadMachine(tx, hello.machine_id));
    std::set<std::string> models;
    if (m) {
      for (const MachineGpu& g : m->gpus) models.insert(g.catalog_id);
    }
    return ReportPriceFacts(tx, now, hello.machine_id, models);
  });
}

std::string FleetTestBase::NewProvider(const std::string& name) {
  std::string email = name + "@example.com";
  for (auto& c : email) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto user = accounts_->SignUp({email, "provider-password", name + " Provider"}, "192.0.2.8");
  EXPECT_TRUE(user.ok()) << user.status().ToString();
  if (!user.ok()) return "";
  Status st = db().Transact([&](store::Tx& tx) {
    return providers::UpsertProvider(tx, clock_.Now(), user->id, providers::Tier::kCommunity,
                                     NewId("app"), admin_);
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return user->id;
}

std::string FleetTestBase::NewAgentToken(const std::string& provider_id) {
  std::string id;
  Status st = db().Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(providers::NewAgentToken t,
                            providers::IssueAgentToken(tx, clock_.Now(), provider_id, "agent"));
    id = t.token.id;
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return id;
}

FakeAgent& FleetTestBase::NewAgent(const std::string& provider_id, int gpus, bool emulated) {
  const std::string& token = provider_id == pia_     ? pia_token_
                             : provider_id == oscar_ ? oscar_token_
                                                     : provider_id;
  agents_.push_back(std::make_unique<FakeAgent>(*fleet_, provider_id, token, gpus, emulated));
  return *agents_.back();
}

std::vector<std::string> FleetTestBase::GpuIds(const std::string& machine_id) {
  return Texts("SELECT id FROM machine_gpus WHERE machine_id = ? ORDER BY idx", {machine_id});
}

std::string FleetTestBase::ListingOf(const std::string& gpu_id) {
  return Text("SELECT listing_state FROM machine_gpus WHERE id = ?", {gpu_id});
}

}  // namespace gpunex::platform::fleet::testing
