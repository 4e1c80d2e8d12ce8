// Benchmarks with a real Fleet on both backends: what is scheduled when, what a result
// does to the run, the scores and the listing, and what the provider is told. An agent is
// played through Fleet::Open and AgentSession::OnMessage with protocol JSON, so results
// arrive through the real result hook; the clock is a FakeClock and TickOnce is called
// directly.
#include "platform/benchmarks/benchmarks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>

#include "common/thread_annotations.h"
#include "platform/accounts/accounts.h"
#include "platform/catalog/catalog.h"
#include "platform/fleet/agent_session.h"
#include "platform/fleet/fleet.h"
#include "platform/fleet/test_util.h"
#include "platform/fleet/workloads.h"
#include "platform/notify/notify.h"
#include "platform/providers/providers.h"
#include "platform/testing/platform_test.h"

namespace gpunex::platform::benchmarks {
namespace {

using listing::BenchmarkVerdict;
using listing::ListingState;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// The agent's side of one connection: what the platform sent on it.
class FakeChannel final : public fleet::AgentChannel {
 public:
  bool Send(std::string text) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (closed_) return false;
    sent_.push_back(std::move(text));
    return true;
  }
  void Close(int, std::string) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    closed_ = true;
  }
  std::vector<protocol::PlatformMessage> Received() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    std::vector<protocol::PlatformMessage> out;
    for (const auto& text : sent_) {
      auto m = protocol::ParsePlatformMessage(text);
      EXPECT_TRUE(m.ok()) << m.status().ToString() << ": " << text;
      if (m.ok()) out.push_back(std::move(*m));
    }
    return out;
  }
  bool closed() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return closed_;
  }

 private:
  mutable Mutex mu_;
  std::vector<std::string> sent_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
};

std::string GpuUuid(int index) {
  return "GPU-0000000" + std::to_string(index) + "-aaaa-bbbb-cccc-dddddddddddd";
}

protocol::Gpu L4(int index) {
  protocol::Gpu g;
  g.index = index;
  g.uuid = GpuUuid(index);
  g.name = "NVIDIA L4";
  g.catalog_id = "l4-24gb";
  g.vram_mb = 23034;
  g.driver_version = "550.54.15";
  g.cuda_driver_version = "12.4";
  g.pcie_gen_max = g.pcie_gen_current = 4;
  g.pcie_width_max = g.pcie_width_current = 16;
  g.power_limit_w = 72;
  return g;
}

// An L4 measured at `factor` of its reference figures, its memory at `mem_factor`.
protocol::GpubenchFigures L4Figures(double factor = 0.9, double mem_factor = 0.9,
                                    double thermal = 0) {
  const GpuModel& l4 = *FindGpuModel("l4-24gb");
  protocol::GpubenchFigures f;
  f.fp32_tflops = l4.fp32_tflops * factor;
  f.fp16_tflops = l4.fp16_tflops * factor;
  f.fp16_tensor_tflops = f.bf16_tensor_tflops = l4.fp16_tensor_tflops * factor;
  f.tf32_tensor_tflops = l4.tf32_tensor_tflops * factor;
  f.mem_read_gbps = f.mem_write_gbps = f.mem_copy_gbps = f.mem_triad_gbps =
      l4.mem_bw_gbps * mem_factor;
  f.sustained_seconds = 60;
  f.sustained_mean_tflops = 100;
  f.sustained_min_over_median = 0.98;
  f.thermal_throttle_fraction = thermal;
  f.max_temperature_c = 70;
  f.pcie_width = 16;
  f.pcie_gen = 4;
  return f;
}

// A provider's machine as its agent presents it: the hello it sends, and the connection
// it has now.
class FakeAgent {
 public:
  FakeAgent(fleet::Fleet& fleet, std::string provider_id, int gpus, std::string hostname = "rig-1")
      : fleet_(fleet), provider_id_(std::move(provider_id)) {
    hello.agent_version = "1.4.0";
    hello.machine_key = std::string(40, 'k') + hostname;
    hello.host.hostname = hostname;
    hello.host.cpu_cores = 32;
    hello.host.ram_mb = 128 * 1024;
    hello.host.network_isolation =
        protocol::NetworkIsolation{protocol::kIsolated, {}, "fake: isolated"};
    for (int i = 0; i < gpus; ++i) hello.gpus.push_back(L4(i));
  }

  // A new connection that says hello; the machine id the platform gave is kept for the
  // next ones.
  void Connect() {
    channel_ = std::make_shared<FakeChannel>();
    session_ = fleet_.Open(provider_id_, "atk_test", channel_, "10.0.0.7");
    session_->OnMessage(protocol::Serialize(protocol::AgentMessage(hello)));
    ASSERT_TRUE(session_->said_hello()) << "the hello was refused";
    hello.machine_id = session_->machine_id();
  }
  void Disconnect() { session_->OnClose(); }
  const std::string& machine_id() const { return hello.machine_id; }

  // The commands of `kind` received on this connection, in order.
  std::vector<protocol::Command> Commands(std::string_view kind) const {
    std::vector<protocol::Command> out;
    for (auto& m : channel_->Received()) {
      if (auto* c = std::get_if<protocol::Command>(&m); c && c->kind == kind) out.push_back(*c);
    }
    return out;
  }
  // The run_benchmark command received last, parsed.
  std::pair<protocol::Command, protocol::RunBenchmark> LastBenchmark() const {
    auto cs = Commands(protocol::kRunBenchmark);
    EXPECT_FALSE(cs.empty()) << "no run_benchmark command was received";
    if (cs.empty()) return {};
    auto p = protocol::ParseRunBenchmark(cs.back().payload);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return {cs.back(), p.ok() ? *p : protocol::RunBenchmark{}};
  }

  void Send(const protocol::AgentMessage& m) { session_->OnMessage(protocol::Serialize(m)); }

  // The result message for the last run_benchmark command: each GPU of the command with
  // `figures` (or `by_uuid` for some), good machine figures when it asked for them.
  protocol::Result BenchmarkResult(
      const protocol::GpubenchFigures& figures,
      const std::map<std::string, std::optional<protocol::GpubenchFigures>>& by_uuid = {},
      std::optional<protocol::BenchmarkNetwork> network = {}) const {
    return ResultFor(LastBenchmark().first, figures, by_uuid, network);
  }
  // The same for a given run_benchmark command.
  static protocol::Result ResultFor(
      const protocol::Command& command, const protocol::GpubenchFigures& figures,
      const std::map<std::string, std::optional<protocol::GpubenchFigures>>& by_uuid = {},
      std::optional<protocol::BenchmarkNetwork> network = {}) {
    auto payload = protocol::ParseRunBenchmark(command.payload);
    EXPECT_TRUE(payload.ok()) << payload.status().ToString();
    protocol::BenchmarkResult r;
    r.benchmark_id = payload->benchmark_id;
    for (const auto& g : payload->gpus) {
      auto it = by_uuid.find(g.uuid);
      const std::optional<protocol::GpubenchFigures> f = it == by_uuid.end() ? figures : it->second;
      if (f) {
        r.gpus.push_back({g.uuid, true, "", protocol::ToJson(*f)});
      } else {
        r.gpus.push_back({g.uuid, false, "no such GPU", std::nullopt});
      }
    }
    if (payload->machine_phases) {
      r.network = network.value_or(protocol::BenchmarkNetwork{1.0, 3.0, 900.0, 800.0});
      r.storage = protocol::BenchmarkStorage{1500.0, 1200.0, 90000.0, 90.0, 400.0, true};
    }
    return protocol::Result{command.command_id, true, "", protocol::ToJson(r)};
  }
  void Answer(const protocol::GpubenchFigures& figures,
              const std::map<std::string, std::optional<protocol::GpubenchFigures>>& by_uuid = {}) {
    Send(BenchmarkResult(figures, by_uuid));
  }

  protocol::Hello hello;

 private:
  fleet::Fleet& fleet_;
  const std::string provider_id_;
  std::shared_ptr<FakeChannel> channel_;
  std::shared_ptr<fleet::AgentSession> session_;
};

class BenchmarksTest : public testing::PlatformTest {
 protected:
  void SetUp() override {
    PlatformTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(catalog::SeedBuiltinModels(faulty(), clock_).ok());
    accounts_ = std::make_unique<accounts::Accounts>(faulty(), FastAccountsOptions());
    auto admin = accounts_->CreateAdmin("root@example.com", "0123456789", "Root");
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    admin_.user = *admin;
    provider_ = Provider("prov@example.com", "Ana");
    other_ = Provider("other@example.com", "Bo");
    auto customer = accounts_->SignUp({"cust@example.com", "0123456789", "Cy"}, "");
    ASSERT_TRUE(customer.ok());
    customer_.user = *customer;

    fleet::FleetOptions fo;
    fo.list_after_benchmark = true;
    fo.clock = &clock_;
    fleet_ = std::make_unique<fleet::Fleet>(faulty(), fo);
    fleet::testing::PriceEveryModelOnHello(*fleet_);
    workloads_ = std::make_unique<fleet::Workloads>(faulty(), *fleet_, &clock_);
    BenchmarksOptions bo;
    bo.clock = &clock_;
    bo.public_url = "https://gpunex.example";
    bo.wake_outbox = [this] { ++wakes_; };
    options_ = bo;
    benchmarks_ = std::make_unique<Benchmarks>(faulty(), *fleet_, bo);
  }

  // A user approved as a provider, as the approval of their application makes them.
  accounts::Principal Provider(const std::string& email, const std::string& name) {
    auto u = accounts_->SignUp({email, "0123456789", name}, "");
    EXPECT_TRUE(u.ok()) << u.status().ToString();
    if (!u.ok()) return {};
    accounts::Principal p;
    Status st = faulty().Transact([&](store::Tx& tx) -> Status {
      GPUNEX_RETURN_IF_ERROR(providers::UpsertProvider(
          tx, clock_.Now(), u->id, providers::Tier::kCommunity, "app_" + u->id, admin_.user.id));
      GPUNEX_ASSIGN_OR_RETURN(p.user, accounts::LoadUser(tx, u->id));
      return Status::Ok();
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return p;
  }

  // A machine of the provider with `gpus` L4s whose agent is connected.
  std::unique_ptr<FakeAgent> Join(int gpus, std::string hostname = "rig-1") {
    auto a = std::make_unique<FakeAgent>(*fleet_, provider_.user.id, gpus, std::move(hostname));
    a->Connect();
    return a;
  }

  StatusOr<fleet::Workload> Rent(const std::string& machine_id, const std::string& gpu_id) {
    fleet::CreateWorkloadRequest req;
    req.machine_id = machine_id;
    req.gpu_ids = {gpu_id};
    req.container.image = "busybox:1";
    return workloads_->Create(provider_, req);
  }

  void Tick() {
    Status st = benchmarks_->TickOnce();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  std::vector<BenchmarkRun> Runs(const std::string& machine_id) {
    auto page = benchmarks_->List(provider_, machine_id, PageRequest{200, std::nullopt});
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    return page.ok() ? page->items : std::vector<BenchmarkRun>{};
  }

  std::vector<fleet::MachineGpu> Gpus(const std::string& machine_id) {
    auto m = fleet_->GetMachine(provider_, machine_id);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? m->machine.gpus : std::vector<fleet::MachineGpu>{};
  }

  std::vector<std::string> NotificationKinds(const accounts::Principal& p) {
    auto n = notify::ListNotifications(faulty(), p.user.id, PageRequest{100, std::nullopt}, false);
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    std::vector<std::string> out;
    if (n.ok()) {
      for (const auto& x : n->page.items) out.push_back(x.kind);
    }
    return out;
  }

  store::Rows Query(const std::string& sql, const std::vector<store::Value>& params = {}) {
    auto rows = test_db().Query(sql, params);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? *rows : store::Rows{};
  }
  // Each GPU's stored status row: due_at (Unix µs or -1), due_reason ("" for none).
  std::pair<int64_t, std::string> Due(const std::string& gpu_id) {
    auto rows =
        Query("SELECT due_at, due_reason FROM gpu_benchmark_status WHERE gpu_id = ?", {gpu_id});
    if (rows.empty()) return {-2, "no status row"};
    return {rows[0]["due_at"].OptInt().value_or(-1), rows[0]["due_reason"].OptStr().value_or("")};
  }

  // The machine's first run passes on every GPU.
  void PassFirstRun(FakeAgent& agent) {
    Tick();
    agent.Answer(L4Figures());
    auto runs = Runs(agent.machine_id());
    ASSERT_EQ(runs.size(), 1u);
    ASSERT_EQ(Name(runs[0].state), "passed");
  }

  std::unique_ptr<accounts::Accounts> accounts_;
  accounts::Principal admin_, provider_, other_, customer_;
  std::unique_ptr<fleet::Fleet> fleet_;
  std::unique_ptr<fleet::Workloads> workloads_;
  BenchmarksOptions options_;
  std::atomic<int> wakes_{0};
  std::unique_ptr<Benchmarks> benchmarks_;
};

TEST_P(BenchmarksTest, FirstConnectRunsEveryGpuWithTheMachinePhasesAndAPassListsThem) {
  auto agent = Join(2);
  const std::string mid = agent->machine_id();
  // The hello made both GPUs due; nothing runs before the scheduler's tick.
  EXPECT_THAT(Runs(mid), IsEmpty());
  auto gpus = Gpus(mid);
  ASSERT_EQ(gpus.size(), 2u);
  for (const auto& g : gpus) {
    EXPECT_EQ(Due(g.id).second, "first_connect");
    EXPECT_EQ(g.listing.state, ListingState::kAwaitingFirstBenchmark);
    EXPECT_EQ(g.listing.note, "awaiting its first benchmark");
  }

  Tick();
  auto runs = Runs(mid);
  ASSERT_EQ(runs.size(), 1u);
  const BenchmarkRun& run = runs[0];
  EXPECT_EQ(Name(run.reason), "first_connect");
  EXPECT_EQ(Name(run.state), "running");
  EXPECT_TRUE(run.machine_phases);
  EXPECT_EQ(run.requested_by, std::nullopt);
  EXPECT_EQ(run.created_at, clock_.Now());
  ASSERT_EQ(run.gpus.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(run.gpus[i].index, i);
    EXPECT_EQ(run.gpus[i].name, "NVIDIA L4");
    EXPECT_EQ(run.gpus[i].uuid, GpuUuid(i));
    EXPECT_EQ(Name(run.gpus[i].state), "running");
    ASSERT_TRUE(run.gpus[i].reference.has_value());
    EXPECT_EQ(run.gpus[i].reference->id, "l4-24gb");
  }
  // The agent got the command written with the run.
  auto cmds = agent->Commands(protocol::kRunBenchmark);
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0].command_id, run.command_id);
  auto payload = protocol::ParseRunBenchmark(cmds[0].payload);
  ASSERT_TRUE(payload.ok()) << payload.status().ToString();
  EXPECT_EQ(payload->benchmark_id, run.id);
  EXPECT_EQ(payload->gpus, (std::vector<protocol::RunBenchmark::Gpu>{{GpuUuid(0), "l4-24gb"},
                                                                     {GpuUuid(1), "l4-24gb"}}));
  EXPECT_TRUE(payload->machine_phases);
  EXPECT_EQ(payload->sustain_s, options_.sustain_s);
  EXPECT_EQ(payload->storage_file_mb, options_.storage_file_mb);
  EXPECT_EQ(payload->network_mb, options_.network_mb);
  EXPECT_EQ(payload->pings, options_.pings);
  // While it runs the GPUs carry the benchmarking fact (the awaiting state still wins).
  for (const auto& g : Gpus(mid)) {
    EXPECT_TRUE(g.benchmarking);
    EXPECT_EQ(g.listing.state, ListingState::kAwaitingFirstBenchmark);
  }
  // The GPUs cannot be rented while they are measured.
  auto rent = Rent(mid, gpus[0].id);
  ASSERT_EQ(rent.status().code(), StatusCode::kValidationFailed);
  EXPECT_THAT(rent.status().fields().at("gpu_ids[0]"), HasSubstr("benchmarked"));

  // One run at a time: another tick schedules nothing, a request is refused.
  Tick();
  EXPECT_EQ(Runs(mid).size(), 1u);
  EXPECT_EQ(agent->Commands(protocol::kRunBenchmark).size(), 1u);
  auto again = benchmarks_->Request(provider_, mid);
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("already running"));

  // The result passes: scores stored, verdict passed, listed; a dashboard notification only.
  clock_.Advance(Seconds(90));
  const protocol::GpubenchFigures figures = L4Figures();
  agent->Answer(figures);
  runs = Runs(mid);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(Name(runs[0].state), "passed");
  EXPECT_EQ(runs[0].finished_at, clock_.Now());
  ASSERT_TRUE(runs[0].network.has_value());
  EXPECT_EQ(runs[0].network->download_mbit_s, 900.0);
  ASSERT_TRUE(runs[0].storage.has_value());
  EXPECT_EQ(runs[0].storage->rand_read_iops, 90000.0);
  for (const auto& g : runs[0].gpus) {
    EXPECT_EQ(Name(g.state), "passed");
    EXPECT_EQ(g.figures, figures);
    ASSERT_TRUE(g.score.has_value());
    EXPECT_NEAR(*g.score, PerformanceScore(figures), 1e-9);
    EXPECT_THAT(g.failures, IsEmpty());
  }
  for (const auto& g : Gpus(mid)) {
    EXPECT_FALSE(g.benchmarking);
    EXPECT_EQ(g.benchmark_verdict, BenchmarkVerdict::kPassed);
    EXPECT_EQ(g.listing.state, ListingState::kListed);
    EXPECT_EQ(g.listing.note, "");
    EXPECT_EQ(Due(g.id), (std::pair<int64_t, std::string>{-1, ""}))
        << "not due before the periodic run";
  }
  auto scores = benchmarks_->Scores(mid);
  ASSERT_TRUE(scores.ok());
  ASSERT_EQ(scores->size(), 2u);
  for (const auto& g : Gpus(mid)) {
    const GpuScore& s = scores->at(g.id);
    ASSERT_TRUE(s.performance_score.has_value());
    EXPECT_NEAR(*s.performance_score, PerformanceScore(figures), 1e-9);
    EXPECT_EQ(s.last_benchmark_at, clock_.Now());
  }
  EXPECT_THAT(NotificationKinds(provider_), ElementsAre("benchmark.listed"));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox"), 0);
  EXPECT_EQ(wakes_.load(), 0);
  // Nothing is due: another tick starts nothing.
  Tick();
  EXPECT_EQ(Runs(mid).size(), 1u);
}

TEST_P(BenchmarksTest, PeriodicRunsComeAfterTheInterval) {
  auto agent = Join(2);
  const std::string mid = agent->machine_id();
  PassFirstRun(*agent);
  clock_.Advance(Seconds(options_.interval_s) - kOneSecond);
  Tick();
  EXPECT_EQ(Runs(mid).size(), 1u) << "not yet a week";
  clock_.Advance(2 * kOneSecond);
  Tick();
  auto runs = Runs(mid);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(Name(runs[0].reason), "periodic");
  EXPECT_EQ(runs[0].gpus.size(), 2u);
  EXPECT_TRUE(runs[0].machine_phases);
  // A pass lists nothing new: no notification beyond the first listing.
  agent->Answer(L4Figures());
  EXPECT_EQ(Name(Runs(mid)[0].state), "passed");
  EXPECT_THAT(NotificationKinds(provider_), ElementsAre("benchmark.listed"));
}

TEST_P(BenchmarksTest, SpotChecksComeAtRandomTimesBetweenAnHourAndTheInterval) {
  BenchmarksOptions bo = options_;
  bo.spot_check_mean_s = 6 * 3600;
  benchmarks_ = std::make_unique<Benchmarks>(faulty(), *fleet_, bo);
  auto agent = Join(2);
  const std::string mid = agent->machine_id();
  PassFirstRun(*agent);
  const auto gpus = Gpus(mid);
  std::set<int64_t> due;
  for (const auto& g : gpus) {
    auto [at, reason] = Due(g.id);
    EXPECT_EQ(reason, "spot_check");
    const Duration after = FromUnixMicros(at) - clock_.Now();
    EXPECT_GE(after, kOneHour);
    EXPECT_LE(after, Seconds(bo.interval_s));
    due.insert(at);
  }
  // The earliest falls due: a run with reason spot_check.
  clock_.Set(FromUnixMicros(*due.begin()));
  Tick();
  auto runs = Runs(mid);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(Name(runs[0].reason), "spot_check");
}

TEST_P(BenchmarksTest, AScoreThatJumpsIsFlaggedToTheAdmins) {
  auto agent = Join(1);
  const std::string mid = agent->machine_id();
  PassFirstRun(*agent);
  ASSERT_TRUE(benchmarks_->Request(provider_, mid).ok());
  agent->Answer(L4Figures(0.88, 0.88));  // a few per cent: normal
  EXPECT_THAT(NotificationKinds(admin_), ::testing::Not(::testing::Contains("benchmark.jump")));
  ASSERT_TRUE(benchmarks_->Request(provider_, mid).ok());
  agent->Answer(L4Figures(1.25, 1.25));  // +40 %: still plausible, but hardware does not grow
  EXPECT_THAT(NotificationKinds(admin_), ::testing::Contains("benchmark.jump"));
  EXPECT_EQ(Query("SELECT COUNT(*) AS n FROM machine_events WHERE machine_id = ? AND kind = ?",
                  {mid, "benchmark_jump"})[0]["n"]
                .Int(),
            1);
  EXPECT_THAT(NotificationKinds(provider_), ::testing::Not(::testing::Contains("benchmark.jump")));
}

TEST_P(BenchmarksTest, AScoreThatCreepsAwayFromItsHistoryIsFlaggedToo) {
  auto agent = Join(1);
  const std::string mid = agent->machine_id();
  PassFirstRun(*agent);
  // Each run about 18 % above the one before (0.9, 1.06, 1.25 of the datasheet, all under
  // the 1.3 ceiling): under the 25 % a run, but the third is 27 % above the median of the
  // GPU's recent runs.
  ASSERT_TRUE(benchmarks_->Request(provider_, mid).ok());
  agent->Answer(L4Figures(1.06, 1.06));
  EXPECT_EQ(Name(Runs(mid)[0].state), "passed");
  EXPECT_THAT(NotificationKinds(admin_), ::testing::Not(::testing::Contains("benchmark.jump")));
  ASSERT_TRUE(benchmarks_->Request(provider_, mid).ok());
  agent->Answer(L4Figures(1.25, 1.25));
  EXPECT_EQ(Name(Runs(mid)[0].state), "passed");
  EXPECT_THAT(NotificationKinds(admin_), ::testing::Contains("benchmark.jump"));
  const auto events = Query("SELECT detail FROM machine_events WHERE machine_id = ? AND kind = ?",
                            {mid, "benchmark_jump"});
  ASSERT_EQ(events.size(), 1u);
  EXPECT_THAT(events[0]["detail"].Str(), ::testing::HasSubstr("median of its recent runs"));
}

TEST_P(BenchmarksTest, AChangedInventoryMakesTheGpusDueAgain) {
  auto agent = Join(1);
  const std::string mid = agent->machine_id();
  PassFirstRun(*agent);
  // A reconnect with the same inventory changes nothing.
  agent->Disconnect();
  clock_.Advance(Seconds(60));
  agent->Connect();
  Tick();
  EXPECT_EQ(Runs(mid).size(), 1u);
  // A driver update does.
  agent->Disconnect();
  clock_.Advance(Seconds(60));
  agent->hello.gpus[0].driver_version = "560.28.03";
  agent->Connect();
  const std::string gid = Gpus(mid)[0].id;
  EXPECT_EQ(Due(gid).second, "hardware_change");
  Tick();
  auto runs = Runs(mid);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(Name(runs[0].reason), "hardware_change");
  EXPECT_EQ(Name(runs[0].state), "running");
  // The GPU keeps its listing facts: it is being benchmarked, and was listed.
  auto g = Gpus(mid)[0];
  EXPECT_EQ(g.benchmark_verdict, BenchmarkVerdict::kPassed);
  EXPECT_EQ(g.listing.state, ListingState::kBenchmarking);
  EXPECT_EQ(g.listing.note, "being benchmarked");
  agent->Answer(L4Figures());
  EXPECT_EQ(Gpus(mid)[0].listing.state, ListingState::kListed);
}

TEST_P(BenchmarksTest, ANewGpuIsDueAtOnce) {
  auto agent = Join(1);
  const std::string mid = agent->machine_id();
  // The first run ends without a result: GPU 0 waits for its retry.
  Tick();
  clock_.Advance(Seconds(options_.run_timeout_s) + kOneSecond);
  Tick();
  ASSERT_EQ(Name(Runs(mid)[0].state), "error");
  // A second GPU appears.
  agent->Disconnect();
  clock_.Advance(Seconds(60));
  agent->hello.gpus.push_back(L4(1));
  agent->Connect();
  auto gpus = Gpus(mid);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(Due(gpus[1].id).second, "new_gpu");
  EXPECT_EQ(Due(gpus[0].id).second, "retry");
  EXPECT_EQ(gpus[1].listing.state, ListingState::kAwaitingFirstBenchmark);
  Tick();
  auto runs = Runs(mid);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(Name(runs[0].reason), "new_gpu");
  ASSERT_EQ(runs[0].gpus.size(), 1u) << "GPU 0 is not due before its retry";
  EXPECT_EQ(runs[0].gpus[0].gpu_id, gpus[1].id);
}

TEST_P(BenchmarksTest, ANewGpuOnABenchmarkedMachineIsAHardwareChange) {
  // Adding a GPU changes the machine's inventory, so the GPUs benchmarked before are due
  // again too, and the run is named after the change.
  auto agent = Join(1);
  const std::string mid = agent->machine_id();
  PassFirstRun(*agent);
  agent->Disconnect();
  clock_.Advance(Seconds(60));
  agent->hello.gpus.push_back(L4(1));
  agent->Connect();
  auto gpus = Gpus(mid);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(Due(gpus[0].id).second, "hardware_change");
  EXPECT_EQ(Due(gpus[1].id).second, "new_gpu");
  Tick();
  auto runs = Runs(mid);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(Name(runs[0].reason), "hardware_change");
  EXPECT_EQ(runs[0].gpus.size(), 2u);
  agent->Answer(L4Figures());
  EXPECT_EQ(Gpus(mid)[1].listing.state, ListingState::kListed);
  EXPECT_THAT(NotificationKinds(provider_), ElementsAre("benchmark.listed", "benchmark.listed"));
}

TEST_P(BenchmarksTest, ErrorResultsChangeNoVerdictAndAreRetriedLater) {
  auto agent = Join(2);
  const std::string mid = agent->machine_id();
  PassFirstRun(*agent);
  const auto listing_before = Gpus(mid);
  const auto scores_before = benchmarks_->Scores(mid);
  ASSERT_TRUE(scores_before.ok());

  // The agent could not run the benchmark at all.
  auto requested = benchmarks_->Request(provider_, mid);
  ASSERT_TRUE(requested.ok()) << requested.status().ToString();
  clock_.Advance(Seconds(30));
  agent->Send(protocol::Result{
      agent->LastBenchmark().first.command_id, false, "docker engine unreachable", {}});
  auto run = Runs(mid)[0];
  EXPECT_EQ(run.id, requested->id);
  EXPECT_EQ(Name(run.state), "error");
  EXPECT_EQ(run.error, "the agent could not run the benchmark: docker engine unreachable");
  for (const auto& g : run.gpus) {
    EXPECT_EQ(Name(g.state), "error");
    EXPECT_EQ(g.score, std::nullopt);
  }
  const Timestamp retry_at = clock_.Now() + Seconds(options_.retry_after_s);
  auto gpus = Gpus(mid);
  for (size_t i = 0; i < gpus.size(); ++i) {
    EXPECT_EQ(gpus[i].benchmark_verdict, listing_before[i].benchmark_verdict);
    EXPECT_EQ(gpus[i].listing.state, ListingState::kListed);
    EXPECT_FALSE(gpus[i].benchmarking);
    EXPECT_EQ(Due(gpus[i].id), (std::pair<int64_t, std::string>{ToUnixMicros(retry_at), "retry"}));
  }
  auto scores = benchmarks_->Scores(mid);
  ASSERT_TRUE(scores.ok());
  for (const auto& [id, s] : *scores) {
    EXPECT_EQ(s.performance_score, scores_before->at(id).performance_score)
        << "the last score stays";
    EXPECT_EQ(s.last_benchmark_at, scores_before->at(id).last_benchmark_at);
  }

  // Due again once retry_after_s has passed, not before.
  clock_.Advance(Seconds(options_.retry_after_s) - kOneSecond);
  Tick();
  EXPECT_EQ(Runs(mid).size(), 2u);
  clock_.Advance(kOneSecond);
  Tick();
  auto runs = Runs(mid);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(Name(runs[0].reason), "retry");
  EXPECT_EQ(runs[0].gpus.size(), 2u);

  // Malformed figures for one GPU, none for the other: an error for both, nothing else.
  protocol::Result bad = agent->BenchmarkResult(L4Figures(), {{GpuUuid(1), std::nullopt}});
  json::object data = bad.data;
  data["gpus"]
      .as_array()[0]
      .as_object()["result"]
      .as_object()["compute"]
      .as_object()["bf16_tensor_tflops"] = -1.0;
  bad.data = data;
  agent->Send(bad);
  run = Runs(mid)[0];
  EXPECT_EQ(Name(run.state), "error");
  EXPECT_EQ(run.error, "2 GPU(s) not measured");
  ASSERT_EQ(run.gpus.size(), 2u);
  ASSERT_TRUE(run.gpus[0].error.has_value());
  EXPECT_THAT(*run.gpus[0].error, HasSubstr("bf16_tensor_tflops"));
  EXPECT_EQ(run.gpus[1].error, "the benchmark could not run: no such GPU");
  for (const auto& g : Gpus(mid)) {
    EXPECT_EQ(g.listing.state, ListingState::kListed);
    EXPECT_EQ(Due(g.id).second, "retry");
  }

  // A result whose data does not parse ends the run in error too.
  clock_.Advance(Seconds(options_.retry_after_s));
  Tick();
  ASSERT_EQ(Runs(mid).size(), 4u);
  agent->Send(protocol::Result{agent->LastBenchmark().first.command_id, true, "",
                               json::object{{"gpus", 7}}});
  run = Runs(mid)[0];
  EXPECT_EQ(Name(run.state), "error");
  ASSERT_TRUE(run.error.has_value());
  EXPECT_THAT(*run.error, StartsWith("malformed result: "));
  for (const auto& g : Gpus(mid)) EXPECT_EQ(g.listing.state, ListingState::kListed);
  EXPECT_THAT(NotificationKinds(provider_), ElementsAre("benchmark.listed"));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox"), 0);
}

TEST_P(BenchmarksTest, AFailingGpuIsDelistedAndARunThatPassesListsItAgain) {
  auto agent = Join(2);
  const std::string mid = agent->machine_id();
  PassFirstRun(*agent);
  const std::string gid1 = Gpus(mid)[1].id;

  ASSERT_TRUE(benchmarks_->Request(provider_, mid).ok());
  const protocol::GpubenchFigures slow = L4Figures(0.9, /*mem_factor=*/0.5, /*thermal=*/0.6);
  agent->Answer(L4Figures(), {{GpuUuid(1), slow}});
  auto run = Runs(mid)[0];
  EXPECT_EQ(Name(run.state), "failed");
  ASSERT_EQ(run.gpus.size(), 2u);
  EXPECT_EQ(Name(run.gpus[0].state), "passed");
  EXPECT_EQ(Name(run.gpus[1].state), "failed");
  std::vector<std::string> metrics;
  for (const auto& f : run.gpus[1].failures) metrics.push_back(f.metric);
  EXPECT_THAT(metrics, ElementsAre("memory_triad_gbps", "thermal_throttle_fraction"));

  auto gpus = Gpus(mid);
  EXPECT_EQ(gpus[0].listing.state, ListingState::kListed);
  EXPECT_EQ(gpus[1].benchmark_verdict, BenchmarkVerdict::kFailed);
  EXPECT_EQ(gpus[1].listing.state, ListingState::kFailedBenchmark);
  EXPECT_THAT(gpus[1].listing.note, StartsWith("benchmark: memory_triad_gbps 150 < 210 required"));
  auto scores = benchmarks_->Scores(mid);
  ASSERT_TRUE(scores.ok());
  EXPECT_NEAR(*scores->at(gid1).performance_score, PerformanceScore(slow), 1e-9);

  EXPECT_THAT(NotificationKinds(provider_), ElementsAre("benchmark.delisted", "benchmark.listed"));
  auto mails = Query("SELECT kind, to_addr, subject, body FROM email_outbox ORDER BY id");
  ASSERT_EQ(mails.size(), 1u);
  EXPECT_EQ(mails[0]["kind"].Str(), "benchmark.delisted");
  EXPECT_THAT(mails[0]["to_addr"].Str(), HasSubstr("prov@example.com"));
  EXPECT_EQ(mails[0]["subject"].Str(), "gpunex: a GPU was delisted after its benchmark");
  EXPECT_THAT(mails[0]["body"].Str(), StartsWith("Hello Ana,"));
  EXPECT_THAT(mails[0]["body"].Str(), HasSubstr("NVIDIA L4 (GPU 1)"));
  EXPECT_THAT(mails[0]["body"].Str(), HasSubstr("Memory bandwidth is low"));
  EXPECT_THAT(mails[0]["body"].Str(), HasSubstr("airflow"));
  EXPECT_THAT(mails[0]["body"].Str(),
              HasSubstr("https://gpunex.example/#/provider/benchmark?machine=" + mid));
  EXPECT_EQ(wakes_.load(), 1) << "the outbox is woken after the commit";

  // Failing again does not tell the provider twice.
  ASSERT_TRUE(benchmarks_->Request(provider_, mid).ok());
  agent->Answer(L4Figures(), {{GpuUuid(1), slow}});
  EXPECT_EQ(Name(Runs(mid)[0].state), "failed");
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox"), 1);
  EXPECT_EQ(NotificationKinds(provider_).size(), 2u);

  // The provider fixed it and asks for a re-run, which passes.
  ASSERT_TRUE(benchmarks_->Request(provider_, mid).ok());
  agent->Answer(L4Figures(0.95));
  EXPECT_EQ(Name(Runs(mid)[0].state), "passed");
  gpus = Gpus(mid);
  EXPECT_EQ(gpus[1].benchmark_verdict, BenchmarkVerdict::kPassed);
  EXPECT_EQ(gpus[1].listing.state, ListingState::kListed);
  EXPECT_EQ(gpus[1].listing.note, "");
  EXPECT_THAT(NotificationKinds(provider_),
              ElementsAre("benchmark.relisted", "benchmark.delisted", "benchmark.listed"));
  mails = Query("SELECT kind, subject FROM email_outbox ORDER BY id");
  ASSERT_EQ(mails.size(), 2u);
  EXPECT_EQ(mails[1]["kind"].Str(), "benchmark.relisted");
  EXPECT_EQ(mails[1]["subject"].Str(), "gpunex: a GPU is listed again");  // no machine name
  EXPECT_EQ(wakes_.load(), 2);
}

TEST_P(BenchmarksTest, ARentedGpuIsLeftOutAndSoAreTheMachinePhases) {
  auto agent = Join(2);
  const std::string mid = agent->machine_id();
  PassFirstRun(*agent);
  auto gpus = Gpus(mid);
  auto w = Rent(mid, gpus[0].id);
  ASSERT_TRUE(w.ok()) << w.status().ToString();

  clock_.Advance(Seconds(options_.interval_s) + kOneSecond);
  Tick();
  auto runs = Runs(mid);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(Name(runs[0].reason), "periodic");
  ASSERT_EQ(runs[0].gpus.size(), 1u);
  EXPECT_EQ(runs[0].gpus[0].gpu_id, gpus[1].id);
  EXPECT_FALSE(runs[0].machine_phases);
  auto [command, payload] = agent->LastBenchmark();
  EXPECT_EQ(payload.gpus, (std::vector<protocol::RunBenchmark::Gpu>{{GpuUuid(1), "l4-24gb"}}));
  EXPECT_FALSE(payload.machine_phases);
  // The rented GPU stays rented, not benchmarked.
  gpus = Gpus(mid);
  EXPECT_FALSE(gpus[0].benchmarking);
  EXPECT_EQ(gpus[0].listing.state, ListingState::kRented);
  EXPECT_TRUE(gpus[1].benchmarking);
  agent->Answer(L4Figures());
  runs = Runs(mid);
  EXPECT_EQ(Name(runs[0].state), "passed");
  EXPECT_EQ(runs[0].network, std::nullopt);
  // The rented GPU is still due; it waits for the end of its workload.
  EXPECT_EQ(
      Number("SELECT COUNT(*) FROM gpu_benchmark_status WHERE gpu_id = ? AND last_benchmark_at < ?",
             {gpus[0].id, ToUnixMicros(clock_.Now() - Seconds(options_.interval_s))}),
      1);
  Tick();
  EXPECT_EQ(Runs(mid).size(), 2u);

  // A requested run also leaves it out.
  auto requested = benchmarks_->Request(provider_, mid);
  ASSERT_TRUE(requested.ok()) << requested.status().ToString();
  EXPECT_EQ(Name(requested->reason), "requested");
  ASSERT_EQ(requested->gpus.size(), 1u);
  EXPECT_EQ(requested->gpus[0].gpu_id, gpus[1].id);
  EXPECT_FALSE(requested->machine_phases);
  agent->Answer(L4Figures());
  // With the other GPU disabled there is nothing left to benchmark.
  ASSERT_TRUE(fleet_->SetGpuEnabled(provider_, mid, gpus[1].id, false).ok());
  auto none = benchmarks_->Request(provider_, mid);
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(none.status().message(), HasSubstr("no GPU of this machine can be benchmarked now"));
}

TEST_P(BenchmarksTest, OfflineMachinesAreNotScheduled) {
  auto agent = Join(1);
  const std::string mid = agent->machine_id();
  agent->Disconnect();
  clock_.Advance(Seconds(fleet_->options().offline_after_s) + kOneSecond);
  ASSERT_TRUE(fleet_->SweepOnce().ok());
  auto m = fleet_->GetMachine(provider_, mid);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->machine.status, fleet::MachineStatus::kOffline);
  Tick();
  EXPECT_THAT(Runs(mid), IsEmpty());
  auto r = benchmarks_->Request(provider_, mid);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("offline"));
  // Back online, the first run is still due.
  agent->Connect();
  Tick();
  auto runs = Runs(mid);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(Name(runs[0].reason), "first_connect");
}

TEST_P(BenchmarksTest, OnlyTheOwnerAndAdminsSeeAndRequestRuns) {
  auto agent = Join(2);
  const std::string mid = agent->machine_id();
  PassFirstRun(*agent);
  for (const accounts::Principal* p : {&other_, &customer_}) {
    EXPECT_EQ(benchmarks_->Request(*p, mid).status().code(), StatusCode::kNotFound)
        << p->user.email;
    EXPECT_EQ(benchmarks_->List(*p, mid, {}).status().code(), StatusCode::kNotFound)
        << p->user.email;
  }
  EXPECT_EQ(benchmarks_->Request(provider_, "mch_nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(benchmarks_->List(provider_, "mch_nope", {}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Runs(mid).size(), 1u) << "the refused requests started nothing";

  clock_.Advance(Seconds(5));
  auto r = benchmarks_->Request(provider_, mid);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Name(r->reason), "requested");
  EXPECT_EQ(Name(r->state), "running");
  EXPECT_EQ(r->requested_by, provider_.user.id);
  EXPECT_EQ(r->gpus.size(), 2u);
  EXPECT_TRUE(r->machine_phases);
  EXPECT_EQ(r->created_at, clock_.Now());
  EXPECT_EQ(
      Number(
          "SELECT COUNT(*) FROM audit_events WHERE action = 'benchmark.requested' AND subject = ?",
          {r->id}),
      1);
  EXPECT_EQ(agent->LastBenchmark().second.benchmark_id, r->id);
  agent->Answer(L4Figures());

  // Admins see every machine's runs and may ask for one.
  auto list = benchmarks_->List(admin_, mid, {});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->items.size(), 2u);
  auto by_admin = benchmarks_->Request(admin_, mid);
  ASSERT_TRUE(by_admin.ok()) << by_admin.status().ToString();
  EXPECT_EQ(by_admin->requested_by, admin_.user.id);
}

TEST_P(BenchmarksTest, ARunWithoutAResultTimesOutAndALateResultIsIgnored) {
  auto agent = Join(2);
  const std::string mid = agent->machine_id();
  Tick();
  const std::string run_id = Runs(mid)[0].id;
  clock_.Advance(Seconds(options_.run_timeout_s));
  Tick();
  EXPECT_EQ(Name(Runs(mid)[0].state), "running") << "exactly run_timeout_s is not overdue yet";
  clock_.Advance(kOneSecond);
  Tick();
  auto runs = Runs(mid);
  ASSERT_EQ(runs.size(), 1u) << "the GPUs are not due again at once";
  EXPECT_EQ(Name(runs[0].state), "error");
  EXPECT_EQ(runs[0].error, "no result within 1800 s");
  EXPECT_EQ(runs[0].finished_at, clock_.Now());
  const Timestamp retry_at = clock_.Now() + Seconds(options_.retry_after_s);
  for (const auto& g : runs[0].gpus) {
    EXPECT_EQ(Name(g.state), "error");
    EXPECT_EQ(g.error, "no result within 1800 s");
  }
  for (const auto& g : Gpus(mid)) {
    EXPECT_FALSE(g.benchmarking);
    EXPECT_EQ(g.benchmark_verdict, BenchmarkVerdict::kAwaitingFirst);
    EXPECT_EQ(g.listing.state, ListingState::kAwaitingFirstBenchmark);
    EXPECT_EQ(Due(g.id), (std::pair<int64_t, std::string>{ToUnixMicros(retry_at), "retry"}));
  }

  // The run's command is cancelled with it: a reconnect does not send it again (a GPU
  // rented meanwhile would be benchmarked).
  const protocol::Command timed_out = agent->LastBenchmark().first;
  agent->Disconnect();
  agent->Connect();
  EXPECT_THAT(agent->Commands(protocol::kRunBenchmark), IsEmpty());

  // The result arrives after all: the run stays as it ended, nothing is listed.
  clock_.Advance(Seconds(10));
  protocol::Result late = FakeAgent::ResultFor(timed_out, L4Figures());
  agent->Send(late);
  runs = Runs(mid);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(Name(runs[0].state), "error");
  EXPECT_EQ(runs[0].finished_at, clock_.Now() - Seconds(10));
  for (const auto& g : runs[0].gpus) EXPECT_EQ(g.score, std::nullopt);
  for (const auto& g : Gpus(mid)) EXPECT_EQ(g.listing.state, ListingState::kAwaitingFirstBenchmark);
  EXPECT_THAT(NotificationKinds(provider_), IsEmpty());
  auto scores = benchmarks_->Scores(mid);
  ASSERT_TRUE(scores.ok());
  for (const auto& [id, s] : *scores) EXPECT_EQ(s.performance_score, std::nullopt) << id;
  // The command is settled, so it is not sent again.
  EXPECT_EQ(
      Number("SELECT COUNT(*) FROM agent_commands WHERE kind = 'run_benchmark' AND state = 'done'"),
      1);

  // The retry runs once retry_after_s has passed.
  clock_.Set(retry_at);
  Tick();
  runs = Runs(mid);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(Name(runs[0].reason), "retry");
  EXPECT_NE(runs[0].id, run_id);
}

TEST_P(BenchmarksTest, ListPagesNewestFirst) {
  auto agent = Join(1);
  const std::string mid = agent->machine_id();
  PassFirstRun(*agent);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(benchmarks_->Request(provider_, mid).ok());
    agent->Answer(L4Figures());
  }
  const auto all = Runs(mid);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(Name(all[2].reason), "first_connect");
  EXPECT_GT(all[0].id, all[1].id);
  EXPECT_GT(all[1].id, all[2].id);

  auto first = benchmarks_->List(provider_, mid, PageRequest{2, std::nullopt});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->items.size(), 2u);
  EXPECT_EQ(first->items[0].id, all[0].id);
  EXPECT_EQ(first->items[1].id, all[1].id);
  ASSERT_TRUE(first->next.has_value());
  auto rest = benchmarks_->List(provider_, mid, PageRequest{2, first->next});
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  ASSERT_EQ(rest->items.size(), 1u);
  EXPECT_EQ(rest->items[0].id, all[2].id);
  EXPECT_EQ(rest->next, std::nullopt);
  // Each listed run has its GPUs, described.
  ASSERT_EQ(rest->items[0].gpus.size(), 1u);
  EXPECT_EQ(rest->items[0].gpus[0].name, "NVIDIA L4");
  EXPECT_TRUE(rest->items[0].gpus[0].figures.has_value());
  // A page that holds the rest exactly has no next either.
  auto whole = benchmarks_->List(provider_, mid, PageRequest{3, std::nullopt});
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->items.size(), 3u);
  EXPECT_EQ(whole->next, std::nullopt);

  // A machine never benchmarked has no runs and no scores.
  auto idle = Join(1, "rig-2");
  auto none = benchmarks_->List(provider_, idle->machine_id(), {});
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(none->items, IsEmpty());
  EXPECT_EQ(none->next, std::nullopt);
  auto scores = benchmarks_->Scores(idle->machine_id());
  ASSERT_TRUE(scores.ok());
  for (const auto& [id, s] : *scores) {
    EXPECT_EQ(s.performance_score, std::nullopt) << id;
    EXPECT_EQ(s.last_benchmark_at, std::nullopt) << id;
  }
}

// The commit of the result's transaction fails with its outcome unknown; the agent then
// sends its result again (it re-sends the stored result for a repeated command).
class BenchmarksInDoubtTest : public BenchmarksTest {
 protected:
  // The first run fails GPU 0 (a delisting: a notification and an email), and the
  // result's commit is in doubt.
  void FailFirstRunInDoubt(FakeAgent& agent, bool committed) {
    Tick();
    faulty().FailCommit("UPDATE benchmark_runs SET state", committed);
    result_ = agent.BenchmarkResult(L4Figures(0.3));
    first_at_ = clock_.Now();
    agent.Send(result_);
    ASSERT_EQ(faulty().injected(), 1) << "the result's commit was not reached";
  }

  protocol::Result result_;
  Timestamp first_at_;
};

TEST_P(BenchmarksInDoubtTest, ACommittedResultIsAppliedOnceWhenTheAgentSendsItAgain) {
  auto agent = Join(1);
  const std::string mid = agent->machine_id();
  FailFirstRunInDoubt(*agent, /*committed=*/true);
  EXPECT_EQ(Name(Runs(mid)[0].state), "failed");
  EXPECT_EQ(wakes_.load(), 0) << "after-commit work does not run for an unknown outcome";

  clock_.Advance(Seconds(5));
  agent->Send(result_);
  auto runs = Runs(mid);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(Name(runs[0].state), "failed");
  EXPECT_EQ(runs[0].finished_at, first_at_);
  EXPECT_EQ(faulty().Count("UPDATE benchmark_runs SET state"), 1) << "the run was finished once";
  EXPECT_THAT(NotificationKinds(provider_), ElementsAre("benchmark.delisted"));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE kind = 'benchmark.delisted'"), 1);
  EXPECT_EQ(Gpus(mid)[0].listing.state, ListingState::kFailedBenchmark);
}

TEST_P(BenchmarksInDoubtTest, AResultThatDidNotCommitIsAppliedOnceOnTheResend) {
  auto agent = Join(1);
  const std::string mid = agent->machine_id();
  FailFirstRunInDoubt(*agent, /*committed=*/false);
  // Nothing of it is stored.
  EXPECT_EQ(Name(Runs(mid)[0].state), "running");
  EXPECT_THAT(NotificationKinds(provider_), IsEmpty());
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox"), 0);
  EXPECT_EQ(
      Number("SELECT COUNT(*) FROM agent_commands WHERE kind = 'run_benchmark' AND state = 'done'"),
      0);
  auto g = Gpus(mid)[0];
  EXPECT_TRUE(g.benchmarking);
  EXPECT_EQ(g.listing.state, ListingState::kAwaitingFirstBenchmark);
  EXPECT_EQ(wakes_.load(), 0);

  clock_.Advance(Seconds(5));
  agent->Send(result_);
  agent->Send(result_);  // and a plain repeat changes nothing
  auto runs = Runs(mid);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(Name(runs[0].state), "failed");
  EXPECT_EQ(runs[0].finished_at, clock_.Now());
  EXPECT_EQ(faulty().Count("UPDATE benchmark_runs SET state"), 2)
      << "the rolled-back attempt and the re-send";
  EXPECT_THAT(NotificationKinds(provider_), ElementsAre("benchmark.delisted"));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE kind = 'benchmark.delisted'"), 1);
  EXPECT_EQ(wakes_.load(), 1);
  g = Gpus(mid)[0];
  EXPECT_FALSE(g.benchmarking);
  EXPECT_EQ(g.listing.state, ListingState::kFailedBenchmark);
}

GPUNEX_INSTANTIATE_BACKENDS(BenchmarksTest);
GPUNEX_INSTANTIATE_BACKENDS(BenchmarksInDoubtTest);

}  // namespace
}  // namespace gpunex::platform::benchmarks
