// Rentals over a real store on both backends, with a fake agent and a FakeClock: billing
// starts when the agent reports the container running and equals the formulas for the
// billed seconds; a container that fails to start is never billed; the balance running
// out, max_cost_micro and max_duration_s end a rental at exactly their point; a machine
// gone dark ends its rentals as agent lost, billed to its last heartbeat and refunded;
// idempotency keys and the race for the last GPU; bad requests name their field; the
// ledger check holds after each; and docs/billing.md's worked example.
#include "platform/rentals/rentals.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "common/background.h"
#include "platform/applications/applications_store.h"
#include "platform/billing/billing.h"
#include "platform/billing/metering.h"
#include "platform/catalog/catalog.h"
#include "platform/fleet/test_util.h"
#include "platform/pricing/pricing.h"
#include "platform/providers/providers.h"
#include "platform/rentals/jobs.h"
#include "platform/rentals/rentals_store.h"

namespace gpunex::platform::rentals {
namespace {

using fleet::testing::FakeAgent;

// The name of an end's party or reason, "" for none.
template <typename E>
std::string NameOr(const std::optional<E>& v) {
  return v ? std::string(Name(*v)) : "";
}

constexpr const char* kH100 = "h100-sxm-80gb";
constexpr int64_t kPrice = 450'000;  // 0.45 USDC per GPU-hour

class RentalsTest : public fleet::testing::FleetTestBase {
 protected:
  void SetUp() override {
    FleetTestBase::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    clock_.Set(*ParseRfc3339("2026-12-01T10:00:00Z"));
    ASSERT_TRUE(catalog::SeedBuiltinModels(db(), clock_).ok());
    price_every_model_ = false;
    MakeFleet(DefaultOptions());
    pricing_ =
        std::make_unique<pricing::Pricing>(faults(), fleet(), pricing::PricingOptions{&clock_});
    market_ = std::make_unique<market::Market>(faults(), market::MarketOptions{.clock = &clock_});
    workloads_ = std::make_unique<fleet::Workloads>(faults(), fleet(), &clock_);
    billing_ = std::make_unique<billing::Billing>(faults(), &clock_);
    RentalsOptions o;
    o.clock = &clock_;
    rentals_ = std::make_unique<Rentals>(faults(), fleet(), *workloads_, *market_, o);
    Approve(pia_);
    ASSERT_TRUE(pricing_->SetProviderPrices(As(pia_), {{kH100, Usdc::Micros(kPrice)}}).ok());
    agent_ = &NewAgent(pia_, 2);
    ASSERT_TRUE(agent_->Join().has_value());
    Reload();
  }
  void TearDown() override {
    rentals_.reset();
    billing_.reset();
    workloads_.reset();
    market_.reset();
    pricing_.reset();
    FleetTestBase::TearDown();
  }

  void Approve(const std::string& user_id) {
    ASSERT_TRUE(db().Transact([&](store::Tx& tx) -> Status {
                      applications::ApplicationRow row;
                      row.id = "app_" + user_id;
                      row.user_id = user_id;
                      row.status = applications::ApplicationStatus::kApproved;
                      applications::GpuEntry e;
                      e.model = kH100;
                      e.location = applications::Location{"Milan", "IT", "eu-south"};
                      row.body.gpus = {e};
                      row.suggested_tier = applications::Tier::kCommunity;
                      row.created_at = row.updated_at = clock_.Now();
                      return applications::ApplicationsStore(tx).Insert(row);
                    })
                    .ok());
  }
  void Reload() { ASSERT_TRUE(market_->ReloadAll().ok()); }
  std::string OfferId() {
    auto snap = market_->snapshot();
    EXPECT_EQ(snap->offers().size(), 1u);
    return snap->offers().empty() ? "" : snap->offers()[0]->id;
  }
  void Credit(const std::string& user, int64_t micros) {
    auto c = billing_->Credit(As(admin_), {user, Usdc::Micros(micros), "test credit", ""});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
  }
  // A rental of the fixture's only offer, or of `offer_id`.
  CreateRentalRequest Request(int64_t gpus = 1, const std::string& offer_id = "") {
    CreateRentalRequest r;
    r.offer_id = offer_id.empty() ? OfferId() : offer_id;
    r.gpus = gpus;
    r.container.image = "registry.example/train:1";
    r.container.command = {"python", "train.py"};
    return r;
  }
  // The offer of one machine (the fixture's agent has one; tests add others).
  std::string OfferOn(const std::string& machine_id) {
    for (const market::Offer* o : market_->snapshot()->offers()) {
      if (o->machine_id == machine_id) return o->id;
    }
    ADD_FAILURE() << "no offer on " << machine_id;
    return "";
  }
  Rental Load(const std::string& id) {
    auto r = rentals_->Get(As(admin_), id);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Rental{};
  }
  // The agent reports the rental's container starting, then running.
  void Run(const Rental& r) {
    agent_->Event(r.workload_id, "starting");
    EXPECT_EQ(Name(Load(r.id).state), "starting");
    agent_->Event(r.workload_id, "running", std::nullopt, "", "ctr-" + r.id);
    EXPECT_EQ(Name(Load(r.id).state), "running");
  }
  int64_t Balance(const std::string& user) {
    auto b = rentals_->Balance(As(user));
    EXPECT_TRUE(b.ok());
    return b.ok() ? b->balance.micros() : -1;
  }
  void ExpectFormulas(const Rental& r) {
    auto m = billing::Meter(r.price, r.gpus, r.billed_seconds, r.fee_bps);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(r.charged, m->owed) << r.id;
    EXPECT_EQ(r.fee, m->fee);
    EXPECT_EQ(r.provider_part, m->provider);
    EXPECT_EQ(Number("SELECT COALESCE(SUM(amount), 0) FROM ledger_transfers WHERE rental_id = ? "
                     "AND kind IN ('usage_provider', 'usage_fee')",
                     {r.id}),
              r.charged.micros());
  }
  void ExpectLedgerOk() {
    auto c = billing_->Check(As(admin_));
    ASSERT_TRUE(c.ok());
    EXPECT_TRUE(c->ok);
    EXPECT_EQ(c->sum_micro, 0);
  }
  // A metering round after the agent's heartbeat (a tick bills to the last one).
  void Meter() {
    agent_->Heartbeat();
    ASSERT_TRUE(rentals_->MeterDue().ok());
  }

  std::unique_ptr<pricing::Pricing> pricing_;
  std::unique_ptr<market::Market> market_;
  std::unique_ptr<fleet::Workloads> workloads_;
  std::unique_ptr<billing::Billing> billing_;
  std::unique_ptr<Rentals> rentals_;
  FakeAgent* agent_ = nullptr;
};

TEST_P(RentalsTest, RentRunStopIsBilledTheFormulaForTheSecondsItRan) {
  Credit(customer_, 10'000'000);
  auto r = rentals_->Create(As(customer_), Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Name(r->state), "pending");
  EXPECT_EQ(r->price.micros(), kPrice);
  EXPECT_EQ(r->fee_bps, 2000);  // community
  // The start command went to the agent through the workload path.
  bool started = false;
  for (const auto& c : agent_->Commands()) started = started || c.kind == "start_workload";
  EXPECT_TRUE(started);
  clock_.Advance(Seconds(40));  // pulling and creating are not billed
  Run(*r);
  clock_.Advance(Seconds(125));
  Meter();
  Rental mid = Load(r->id);
  EXPECT_EQ(mid.billed_seconds, 125);
  EXPECT_EQ(mid.charged.micros(), 450'000 * 125 / 3600);
  ExpectFormulas(mid);
  clock_.Advance(Seconds(10));
  auto stopped = rentals_->Stop(As(customer_), r->id);
  ASSERT_TRUE(stopped.ok()) << stopped.status().ToString();
  EXPECT_EQ(Name(stopped->state), "ending");
  EXPECT_EQ(stopped->billed_seconds, 135);
  clock_.Advance(Seconds(20));  // the agent takes its time: not billed
  agent_->Event(r->workload_id, "stopped", 137);
  Rental end = Load(r->id);
  EXPECT_EQ(Name(end.state), "ended");
  EXPECT_EQ(NameOr(end.end_reason), "stopped");
  EXPECT_EQ(NameOr(end.end_party), "customer");
  EXPECT_EQ(end.billed_seconds, 135);
  ExpectFormulas(end);
  EXPECT_EQ(Balance(customer_), 10'000'000 - end.charged.micros());
  EXPECT_EQ(Number("SELECT balance FROM ledger_accounts WHERE id = ?",
                   {billing::ProviderPendingAccount(pia_)}),
            end.provider_part.micros());
  ExpectLedgerOk();
  EXPECT_EQ(rentals_->Stop(As(customer_), r->id).status().code(), StatusCode::kFailedPrecondition);
}

// What another module adds to a rental container's environment (sshkeys: PUBLIC_KEY)
// reaches the agent; a variable the customer set keeps the customer's value.
TEST_P(RentalsTest, ModulesAddToTheContainersEnvironmentButTheCustomersValuesWin) {
  Credit(customer_, 10'000'000);
  std::vector<std::string> asked_for;
  rentals_->AddContainerEnv([&asked_for](store::Tx&, const std::string& customer_id)
                                -> StatusOr<std::vector<std::pair<std::string, std::string>>> {
    asked_for.push_back(customer_id);
    return std::vector<std::pair<std::string, std::string>>{{"PUBLIC_KEY", "ssh-ed25519 AAAAkey"},
                                                            {"GREETING", "from the platform"}};
  });
  CreateRentalRequest q = Request();
  q.container.env = {{"GREETING", "mine"}};
  auto r = rentals_->Create(As(customer_), q);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(asked_for, std::vector<std::string>{customer_});
  std::optional<protocol::StartWorkload> start;
  for (const auto& c : agent_->Commands()) {
    if (c.kind != "start_workload") continue;
    auto parsed = protocol::ParseStartWorkload(c.payload);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    start = *parsed;
  }
  ASSERT_TRUE(start.has_value());
  EXPECT_EQ(start->env, (std::vector<std::pair<std::string, std::string>>{
                            {"GREETING", "mine"}, {"PUBLIC_KEY", "ssh-ed25519 AAAAkey"}}));
}

// Declared ports (issue 25) are kept with the rental, public flags too, and reach the
// agent without them.
TEST_P(RentalsTest, DeclaredPortsAreKeptAndSentToTheAgentWithoutPublic) {
  Credit(customer_, 10'000'000);
  CreateRentalRequest q = Request();
  q.container.ports = {{8888, protocol::PortProtocol::kHttp, true},
                       {22, protocol::PortProtocol::kTcp, false}};
  auto r = rentals_->Create(As(customer_), q);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->ports, q.container.ports);
  auto again = rentals_->Get(As(customer_), r->id);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->ports, q.container.ports);
  std::optional<protocol::StartWorkload> start;
  for (const auto& c : agent_->Commands()) {
    if (c.kind != "start_workload") continue;
    EXPECT_EQ(ToJsonText(c.payload.at("ports")),
              R"([{"port":8888,"protocol":"http"},{"port":22,"protocol":"tcp"}])");
    auto parsed = protocol::ParseStartWorkload(c.payload);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    start = *parsed;
  }
  ASSERT_TRUE(start.has_value());
  EXPECT_EQ(start->ports,
            (std::vector<protocol::WorkloadPort>{{8888, protocol::PortProtocol::kHttp, false},
                                                 {22, protocol::PortProtocol::kTcp, false}}));
  // A port twice or port 0, from a path that did not come through the API's reader.
  q = Request();
  q.container.ports = {{22, protocol::PortProtocol::kTcp, false}, {22}};
  auto dup = rentals_->Create(As(customer_), q);
  ASSERT_EQ(dup.status().code(), StatusCode::kValidationFailed);
  EXPECT_TRUE(dup.status().fields().count("ports[1].port")) << dup.status().ToString();
}

TEST_P(RentalsTest, AContainerThatFailsToStartIsNeverBilled) {
  Credit(customer_, 10'000'000);
  auto r = rentals_->Create(As(customer_), Request());
  ASSERT_TRUE(r.ok());
  agent_->Event(r->workload_id, "starting");
  clock_.Advance(Seconds(300));
  agent_->Event(r->workload_id, "failed", std::nullopt, "image pull failed: not found");
  Rental end = Load(r->id);
  EXPECT_EQ(Name(end.state), "ended");
  EXPECT_EQ(NameOr(end.end_reason), "start_failed");
  EXPECT_EQ(NameOr(end.end_party), "customer");
  EXPECT_EQ(end.billed_seconds, 0);
  EXPECT_EQ(end.charged.micros(), 0);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM ledger_transfers WHERE rental_id = ?", {r->id}), 0);
  EXPECT_EQ(Balance(customer_), 10'000'000);
}

TEST_P(RentalsTest, AStartThatFailsOnTheMachinesSideIsTheProvidersAndNotBilled) {
  Credit(customer_, 10'000'000);
  auto r = rentals_->Create(As(customer_), Request());
  ASSERT_TRUE(r.ok());
  agent_->Event(r->workload_id, "starting");
  agent_->Event(r->workload_id, "failed", std::nullopt,
                "engine: the Docker socket /var/run/docker.sock does not exist");
  Rental end = Load(r->id);
  EXPECT_EQ(Name(end.state), "ended");
  EXPECT_EQ(NameOr(end.end_party), "provider");
  EXPECT_EQ(NameOr(end.end_reason), "start_failed");
  EXPECT_EQ(end.detail, "The container engine on the provider's machine failed.");
  EXPECT_EQ(end.charged.micros(), 0);
  EXPECT_EQ(Balance(customer_), 10'000'000);
}

// Issue 24, docs/billing.md "Who ended it": every ending of a rental that ran is put down
// to the party that caused it, from the cause the agent reports; the provider's side in
// the first early_fault_refund_s is refunded in full, the customer's is charged; the
// customer reads a sentence, never the agent's words.
TEST_P(RentalsTest, EveryEndingOfARunningRentalIsPutDownToWhoCausedIt) {
  Credit(customer_, 10'000'000);
  struct Row {
    std::string state, cause;
    std::optional<int64_t> exit_code;
    std::string end_reason, party, sentence;  // sentence: a prefix
  };
  const std::string words = "docker: dial tcp 10.9.8.7:2375: connect: connection refused";
  int64_t provider_told = 0;
  for (const Row& row : std::vector<Row>{
           {"exited", protocol::kCauseExited, 3, "exited", "customer",
            "The workload ended by itself with exit code 3."},
           {"failed", protocol::kCauseOomKilled, 137, "out_of_memory", "customer",
            "The workload used more memory than its limit of "},
           {"stopped", protocol::kCauseStopped, 143, "exited", "customer",
            "The workload was stopped on request."},
           {"failed", protocol::kCauseContainerGone, 137, "container_removed", "provider",
            "The container was removed on the provider's machine."},
           {"stopped", protocol::kCauseAgentShutdown, 143, "machine_shutdown", "provider",
            "The provider's machine shut its agent down."},
           {"failed", protocol::kCauseEngineError, std::nullopt, "hardware_failure", "provider",
            "The container engine on the provider's machine failed."},
       }) {
    SCOPED_TRACE(row.cause);
    Reload();
    const int64_t balance = Balance(customer_);
    auto r = rentals_->Create(As(customer_), Request());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Run(*r);
    clock_.Advance(Seconds(100));
    Meter();
    agent_->Event(r->workload_id, row.state, row.exit_code, words, "", row.cause);
    Rental end = Load(r->id);
    EXPECT_EQ(Name(end.state), "ended");
    EXPECT_EQ(NameOr(end.end_reason), row.end_reason);
    EXPECT_EQ(NameOr(end.end_party), row.party);
    EXPECT_EQ(end.exit_code, row.exit_code);
    EXPECT_EQ(end.billed_seconds, 100);
    EXPECT_TRUE(end.charged.is_positive());
    ExpectFormulas(end);
    EXPECT_TRUE(end.detail.starts_with(row.sentence)) << end.detail;
    EXPECT_EQ(end.detail.find("10.9.8.7"), std::string::npos) << end.detail;
    // The customer is told of every end but its own stop, in the same sentence.
    EXPECT_EQ(Number("SELECT COUNT(*) FROM notifications WHERE kind = 'rental.ended' AND "
                     "user_id = ? AND body LIKE ?",
                     {customer_, "%ended: " + end.detail.substr(0, end.detail.size() - 1) +
                                     ". It was billed%"}),
              1);
    // The provider, of an end on its side: what to fix, and the machine's own words.
    const int64_t told_provider = Number(
        "SELECT COUNT(*) FROM notifications WHERE kind = 'rental.ended_provider_side' AND "
        "user_id = ? AND body LIKE ?",
        {pia_, "%ended on your machine's side, and was refunded to the customer. %" +
                   std::string("What the machine said: ") + words});
    provider_told += row.party == "provider" ? 1 : 0;
    EXPECT_EQ(told_provider, provider_told);
    if (row.party == "provider") {
      EXPECT_EQ(end.refunded, end.charged) << "the early-fault refund";
      EXPECT_EQ(Balance(customer_), balance);
      EXPECT_EQ(Number("SELECT COUNT(*) FROM notifications WHERE kind = 'rental.ended' AND "
                       "body LIKE ?",
                       {"%ended: " + end.detail.substr(0, end.detail.size() - 1) +
                        ". It was billed%refunded in full."}),
                1);
    } else {
      EXPECT_EQ(end.refunded.micros(), 0);
      EXPECT_EQ(Balance(customer_), balance - end.charged.micros());
    }
    // The provider keeps the agent's words on the workload.
    auto w = workloads_->Get(As(pia_), r->workload_id);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w->end_reason.value_or(""), words);
    EXPECT_EQ(w->end_cause.value_or(""), row.cause);
    if (row.cause == protocol::kCauseOomKilled) {
      EXPECT_EQ(end.detail, "The workload used more memory than its limit of " +
                                std::to_string(w->spec.memory_mb) +
                                " MiB and was stopped by the kernel.");
    }
  }
  ExpectLedgerOk();
}

TEST_P(RentalsTest, AProviderSideEndingAfterTheEarlyFaultWindowIsChargedNotRefunded) {
  Credit(customer_, 10'000'000);
  auto r = rentals_->Create(As(customer_), Request());
  ASSERT_TRUE(r.ok());
  Run(*r);
  clock_.Advance(Seconds(700));  // past early_fault_refund_s (600)
  Meter();
  agent_->Event(r->workload_id, "failed", 137, "the container was removed outside the agent", "",
                protocol::kCauseContainerGone);
  Rental end = Load(r->id);
  EXPECT_EQ(NameOr(end.end_reason), "container_removed");
  EXPECT_EQ(NameOr(end.end_party), "provider");
  EXPECT_EQ(end.billed_seconds, 700);
  EXPECT_EQ(end.refunded.micros(), 0);
  EXPECT_EQ(Balance(customer_), 10'000'000 - end.charged.micros());
  ExpectLedgerOk();
}

// A start that fails is never billed, whoever's it was; the party follows the cause.
TEST_P(RentalsTest, EveryStartFailureIsPutDownToWhoCausedItAndNeverBilled) {
  Credit(customer_, 10'000'000);
  constexpr char kPullFailed[] =
      "The image could not be pulled: check that the reference is right, that the image exists "
      "and that it is public.";
  struct Row {
    std::string image, cause, party, sentence;
  };
  const std::string own = "registry.example/train:1", hub = "pytorch/pytorch:2.3.0";
  for (const Row& row : std::vector<Row>{
           {own, protocol::kCauseImageNotFound, "customer", kPullFailed},
           {own, protocol::kCauseImageRefused, "customer", kPullFailed},
           {own, protocol::kCauseRegistryUnreachable, "customer", kPullFailed},
           {hub, protocol::kCauseRegistryUnreachable, "provider",
            "The provider's machine could not download the image."},
           {hub, protocol::kCauseBadCommand, "customer",
            "The container's command could not be started: check that it exists in the image "
            "and is executable."},
           {hub, protocol::kCauseEngineError, "provider",
            "The container engine on the provider's machine failed."},
           {hub, protocol::kCausePolicyRefused, "provider",
            "The provider's machine refused the container."},
           {hub, fleet::kCauseStartRefused, "provider",
            "The provider's machine did not accept the workload."},
       }) {
    SCOPED_TRACE(row.image + " " + row.cause);
    Reload();
    CreateRentalRequest req = Request();
    req.container.image = row.image;
    auto r = rentals_->Create(As(customer_), req);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (row.cause == fleet::kCauseStartRefused) {
      std::string command_id;
      for (const auto& c : agent_->Commands()) {
        auto spec = protocol::ParseStartWorkload(c.payload);
        if (c.kind == protocol::kStartWorkload && spec.ok() &&
            spec->workload_id == r->workload_id) {
          command_id = c.command_id;
        }
      }
      ASSERT_FALSE(command_id.empty());
      agent_->Result(command_id, false, "no Docker engine is reachable on this machine");
    } else {
      agent_->Event(r->workload_id, "starting");
      agent_->Event(r->workload_id, "failed", std::nullopt,
                    "image: pulling x: docker: dial tcp 192.168.7.7:5000: i/o timeout", "",
                    row.cause);
    }
    Rental end = Load(r->id);
    EXPECT_EQ(Name(end.state), "ended");
    EXPECT_EQ(NameOr(end.end_reason), "start_failed");
    EXPECT_EQ(NameOr(end.end_party), row.party);
    EXPECT_EQ(end.detail, row.sentence);
    EXPECT_EQ(end.billed_seconds, 0);
    EXPECT_EQ(end.charged.micros(), 0);
    EXPECT_EQ(Number("SELECT COUNT(*) FROM ledger_transfers WHERE rental_id = ?", {r->id}), 0);
    EXPECT_EQ(Balance(customer_), 10'000'000);
  }
}

TEST_P(RentalsTest, ABalanceOfOneHourStopsTheRentalAtExactlyZero) {
  Credit(customer_, kPrice);  // one hour of one GPU
  auto r = rentals_->Create(As(customer_), Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Run(*r);
  for (int i = 0; i < 61; ++i) {  // ticks every minute, as configured by default
    clock_.Advance(Seconds(60));
    Meter();
    ASSERT_GE(Balance(customer_), 0);
  }
  Rental end = Load(r->id);
  EXPECT_EQ(Name(end.state), "ending");
  EXPECT_EQ(NameOr(end.end_reason), "balance_exhausted");
  EXPECT_EQ(NameOr(end.end_party), "platform");
  EXPECT_EQ(end.billed_seconds, 3600);
  EXPECT_EQ(end.charged.micros(), kPrice);
  EXPECT_EQ(Balance(customer_), 0);
  ExpectFormulas(end);
  ExpectLedgerOk();
  // The agent was asked to remove the container.
  bool stop = false;
  for (const auto& c : agent_->Commands()) stop = stop || c.kind == "stop_workload";
  EXPECT_TRUE(stop);
}

TEST_P(RentalsTest, ABalanceRunningOutBetweenTicksIsChargedOnlyToTheMomentItReachedZero) {
  Credit(customer_, kPrice);
  auto r = rentals_->Create(As(customer_), Request());
  ASSERT_TRUE(r.ok());
  Run(*r);
  clock_.Advance(Seconds(5000));  // no tick for longer than the balance lasts
  Meter();
  Rental end = Load(r->id);
  EXPECT_EQ(NameOr(end.end_reason), "balance_exhausted");
  EXPECT_EQ(end.billed_seconds, 3600);
  EXPECT_EQ(Balance(customer_), 0);
}

TEST_P(RentalsTest, MaxCostAndMaxDurationEndARentalAtTheirPoint) {
  Credit(customer_, 10'000'000);
  CreateRentalRequest capped = Request();
  capped.max_cost = Usdc::Micros(100'000);  // 800 s at 0.45 USDC/h
  auto r = rentals_->Create(As(customer_), capped);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Run(*r);
  clock_.Advance(Seconds(60));
  Meter();
  clock_.Advance(Seconds(900));
  Meter();
  Rental end = Load(r->id);
  EXPECT_EQ(NameOr(end.end_reason), "max_cost");
  EXPECT_EQ(NameOr(end.end_party), "customer");
  EXPECT_EQ(end.billed_seconds, 800);
  EXPECT_EQ(end.charged.micros(), 100'000);

  CreateRentalRequest timed = Request();
  timed.max_duration_s = 60;
  Reload();
  timed.offer_id = OfferId();
  auto t = rentals_->Create(As(customer_), timed);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Run(*t);
  clock_.Advance(Seconds(1));
  Meter();
  // The next tick comes at the max duration, not a minute later.
  EXPECT_EQ(Load(t->id).next_meter_at, *Load(t->id).running_at + Seconds(60));
  clock_.Advance(Seconds(200));
  Meter();
  Meter();
  Rental tend = Load(t->id);
  EXPECT_EQ(NameOr(tend.end_reason), "max_duration");
  EXPECT_EQ(tend.billed_seconds, 60);
  ExpectFormulas(tend);
  ExpectLedgerOk();
}

TEST_P(RentalsTest, AMachineGoneDarkEndsItsRentalsAsAgentLostBilledToItsLastHeartbeat) {
  Credit(customer_, 10'000'000);
  auto r = rentals_->Create(As(customer_), Request());
  ASSERT_TRUE(r.ok());
  Run(*r);
  clock_.Advance(Seconds(100));
  agent_->Heartbeat();
  const Timestamp last = clock_.Now();
  agent_->Disconnect();
  clock_.Advance(Seconds(40));
  ASSERT_TRUE(rentals_->MeterDue().ok());      // quiet, not yet offline
  EXPECT_EQ(Load(r->id).billed_seconds, 100);  // not past the last heartbeat
  ASSERT_TRUE(fleet().SweepOnce().ok());       // Offline after missed heartbeats
  ASSERT_TRUE(rentals_->MeterDue().ok());
  EXPECT_EQ(Load(r->id).billed_seconds, 100);
  clock_.Advance(Seconds(200));
  ASSERT_EQ(*rentals_->EndLost(), 0);  // within the grace
  clock_.Advance(Seconds(120));
  ASSERT_EQ(*rentals_->EndLost(), 1);
  Rental end = Load(r->id);
  EXPECT_EQ(Name(end.state), "ended");
  EXPECT_EQ(NameOr(end.end_reason), "agent_lost");
  EXPECT_EQ(NameOr(end.end_party), "provider");
  EXPECT_EQ(end.billing_end_at, last);
  EXPECT_EQ(end.billed_seconds, 100);
  ExpectFormulas(end);
  // A provider's fault in the first ten minutes: refunded in full (docs/billing.md).
  EXPECT_EQ(end.refunded, end.charged);
  EXPECT_EQ(Balance(customer_), 10'000'000);
  EXPECT_EQ(Text("SELECT state FROM workloads WHERE id = ?", {r->workload_id}), "failed");
  EXPECT_EQ(Text("SELECT end_party FROM workloads WHERE id = ?", {r->workload_id}), "provider");
  ExpectLedgerOk();
  // Back again: the container is not expected there any more.
  auto welcome =
      agent_->Join({protocol::RunningContainer{"ctr-" + r->id, r->workload_id, "running"}});
  ASSERT_TRUE(welcome.has_value());
  EXPECT_TRUE(welcome->keep_workload_ids.empty());
}

TEST_P(RentalsTest, AnIdempotencyKeyMakesOneRentalAndTheLastGpuGoesToOneCustomer) {
  Credit(customer_, 10'000'000);
  Credit(oscar_, 10'000'000);
  CreateRentalRequest req = Request();
  req.idempotency_key = "rent-1";
  auto a = rentals_->Create(As(customer_), req);
  auto b = rentals_->Create(As(customer_), req);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->id, b->id);
  CreateRentalRequest other = req;
  other.gpus = 2;
  EXPECT_EQ(rentals_->Create(As(customer_), other).status().fields().count("Idempotency-Key"), 1u);
  // One GPU is left; the snapshot still says two, so the second taker gets a conflict.
  auto c = rentals_->Create(As(oscar_), Request());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto d = rentals_->Create(As(customer_), Request());
  EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition) << d.status().ToString();
  EXPECT_EQ(Number("SELECT COUNT(*) FROM rentals"), 2);
}

TEST_P(RentalsTest, BadRequestsNameTheirFieldAndStoreNothing) {
  Credit(customer_, 10'000'000);
  const std::string before = fleet::testing::Snapshot(test_db());
  auto expect = [&](CreateRentalRequest req, const std::string& field) {
    auto r = rentals_->Create(As(customer_), req);
    ASSERT_EQ(r.status().code(), StatusCode::kValidationFailed)
        << field << ": " << r.status().ToString();
    EXPECT_TRUE(r.status().fields().count(field)) << r.status().ToString();
  };
  CreateRentalRequest q = Request();
  q.offer_id = "ofr_00000000000000000000";
  expect(q, "offer_id");
  q = Request(), q.gpus = 0, expect(q, "gpus");
  q = Request(), q.gpus = 9, expect(q, "gpus");
  q = Request(), q.gpus = 3, expect(q, "gpus");  // more than the offer has free
  q = Request(), q.container.image = "", expect(q, "image");
  q = Request(), q.container.image = "UPPER CASE!", expect(q, "image");
  // The provider's own host and network (issue 24): refused before any pull.
  q = Request(), q.container.image = "127.0.0.1:5000/train:1", expect(q, "image");
  q = Request(), q.container.image = "localhost:5000/train:1", expect(q, "image");
  q = Request(), q.container.image = "169.254.169.254/latest:1", expect(q, "image");
  q = Request(), q.container.image = "10.0.0.5/train:1", expect(q, "image");
  q = Request(), q.container.env = {{"NVIDIA_VISIBLE_DEVICES", "all"}},
  expect(q, "env.NVIDIA_VISIBLE_DEVICES");
  q = Request(), q.container.env = {{"1BAD", "x"}}, expect(q, "env.1BAD");
  q = Request(), q.max_duration_s = 59, expect(q, "max_duration_s");
  q = Request(), q.max_duration_s = kMaxDurationS + 1, expect(q, "max_duration_s");
  q = Request(), q.max_cost = Usdc::Micros(0), expect(q, "max_cost_micro");
  q = Request(), q.max_cost = Usdc::Micros(-5), expect(q, "max_cost_micro");
  q = Request(), q.max_cost = Usdc::Micros(kMaxCostMicro + 1), expect(q, "max_cost_micro");
  // A provider may not rent its own offer; a balance must cover the first hour.
  EXPECT_TRUE(rentals_->Create(As(pia_), Request()).status().fields().count("offer_id"));
  EXPECT_TRUE(rentals_->Create(As(oscar_), Request()).status().fields().count("balance"));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM rentals"), 0);
  EXPECT_EQ(fleet::testing::Snapshot(test_db()), before);
}

TEST_P(RentalsTest, EachPartySeesOnlyWhatIsTheirs) {
  Credit(customer_, 10'000'000);
  auto r = rentals_->Create(As(customer_), Request());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(rentals_->Get(As(oscar_), r->id).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(rentals_->Get(As(pia_), r->id).ok());  // on its machine
  EXPECT_EQ(rentals_->Stop(As(pia_), r->id).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(rentals_->Stop(As(oscar_), r->id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(rentals_->List(As(oscar_), {}, {})->items.size(), 0u);
  EXPECT_EQ(rentals_->List(As(customer_), {}, {})->items.size(), 1u);
  EXPECT_EQ(rentals_->ProviderRentals(As(pia_), "", {})->items.size(), 1u);
  EXPECT_EQ(rentals_->ProviderRentals(As(oscar_), "", {})->items.size(), 0u);
  EXPECT_EQ(rentals_->ProviderRentals(As(customer_), "", {}).status().code(),
            StatusCode::kPermissionDenied);
  // A provider cannot end a customer's rental through its workload either.
  EXPECT_EQ(workloads_->Stop(As(pia_), r->workload_id).status().code(),
            StatusCode::kFailedPrecondition);
  // An admin ends it as the platform.
  auto s = rentals_->Stop(As(admin_), r->id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(NameOr(s->end_reason), "operator");
  EXPECT_EQ(NameOr(s->end_party), "platform");
}

TEST_P(RentalsTest, ALowBalanceWarnsOnceUntilItIsToppedUp) {
  Credit(customer_, kPrice * 2);  // two hours
  auto r = rentals_->Create(As(customer_), Request());
  ASSERT_TRUE(r.ok());
  Run(*r);
  clock_.Advance(Seconds(60));
  Meter();
  EXPECT_EQ(Number("SELECT COUNT(*) FROM notifications WHERE kind = 'balance.low'"), 0);
  clock_.Advance(Seconds(3000));  // 51 minutes left, less than 70
  Meter();
  EXPECT_EQ(Number("SELECT COUNT(*) FROM notifications WHERE kind = 'balance.low'"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE subject LIKE '%running low%'"), 1);
  EXPECT_TRUE(rentals_->Balance(As(customer_))->low);
  clock_.Advance(Seconds(60));
  Meter();
  EXPECT_EQ(Number("SELECT COUNT(*) FROM notifications WHERE kind = 'balance.low'"), 1);
}

TEST_P(RentalsTest, ACrashAfterAMeteringCommitNeitherLosesNorDoublesATransfer) {
  Credit(customer_, 10'000'000);
  auto r = rentals_->Create(As(customer_), Request());
  ASSERT_TRUE(r.ok());
  Run(*r);
  clock_.Advance(Seconds(120));
  agent_->Heartbeat();
  faults().FailCommit("INSERT INTO ledger_transfers", /*committed=*/true);
  EXPECT_FALSE(rentals_->MeterDue().ok());
  Meter();  // the next round finds the totals the lost commit stored
  faults().FailCommit("INSERT INTO ledger_transfers", /*committed=*/false);
  clock_.Advance(Seconds(120));
  agent_->Heartbeat();
  EXPECT_FALSE(rentals_->MeterDue().ok());
  Meter();
  faults().FailStatement("UPDATE rentals SET", Aborted("conflict"));
  clock_.Advance(Seconds(120));
  Meter();  // retried inside
  Rental now = Load(r->id);
  EXPECT_EQ(now.billed_seconds, 360);
  ExpectFormulas(now);
  ExpectLedgerOk();
}

TEST_P(RentalsTest, EnterpriseProvidersPayTheirOwnCommission) {
  ASSERT_TRUE(db().Transact([&](store::Tx& tx) -> Status {
                    return providers::UpsertProvider(tx, clock_.Now(), pia_,
                                                     providers::Tier::kEnterprise, "app_" + pia_,
                                                     admin_);
                  })
                  .ok());
  Credit(customer_, 10'000'000);
  auto r = rentals_->Create(As(customer_), Request());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->fee_bps, 1500);
  Run(*r);
  clock_.Advance(Seconds(3600));
  Meter();
  Rental x = Load(r->id);
  EXPECT_EQ(x.charged.micros(), 450'000);
  EXPECT_EQ(x.fee.micros(), 67'500);
  EXPECT_EQ(x.provider_part.micros(), 382'500);
}

// docs/billing.md, "Refunds": an operator gives back part of an ended rental's charge, the
// commission's share from the platform and the provider's from its pending earnings, then
// its available ones, then (paid out) the platform; never more than was charged less what
// was refunded; a keyed repeat moves nothing; a release after it makes available only
// what the pending account still holds.
TEST_P(RentalsTest, AnOperatorRefundsAnEndedRentalUpToWhatItWasCharged) {
  Credit(customer_, 10'000'000);
  auto r = rentals_->Create(As(customer_), Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Run(*r);
  clock_.Advance(Seconds(3600));
  Meter();
  auto refund = [&](int64_t micros, std::string reason, std::string key = "", std::string as = "") {
    return rentals_->Refund(As(as.empty() ? admin_ : as),
                            {r->id, Usdc::Micros(micros), std::move(reason), std::move(key)});
  };
  EXPECT_EQ(refund(1000, "late start").status().code(), StatusCode::kFailedPrecondition)
      << "still billed";
  ASSERT_TRUE(rentals_->Stop(As(customer_), r->id).ok());
  agent_->Event(r->workload_id, "stopped", 0);
  const Rental end = Load(r->id);
  ASSERT_EQ(end.charged.micros(), 450'000);
  ASSERT_EQ(end.fee.micros(), 90'000);
  const std::string pending = billing::ProviderPendingAccount(pia_);
  const std::string available = billing::ProviderAvailableAccount(pia_);
  const std::string platform(billing::kPlatformCommission);
  auto balance = [&](const std::string& account) {
    return Number("SELECT COALESCE(SUM(balance), 0) FROM ledger_accounts WHERE id = ?", {account});
  };
  const int64_t paid = 10'000'000 - 450'000;
  ASSERT_EQ(Balance(customer_), paid);

  // Refused, and nothing moves: not an operator, bad amounts and reasons, too much.
  EXPECT_EQ(refund(1000, "x", "", customer_).status().code(), StatusCode::kPermissionDenied);
  for (int64_t bad : {int64_t{0}, int64_t{-5}, int64_t{450'001}}) {
    auto st = refund(bad, "late start").status();
    EXPECT_EQ(st.code(), StatusCode::kValidationFailed) << bad;
    EXPECT_TRUE(st.fields().contains("amount_micro")) << st.ToString();
  }
  for (const std::string& bad : {std::string(), std::string(201, 'x'), std::string("two\nlines")}) {
    auto st = refund(1000, bad).status();
    EXPECT_TRUE(st.fields().contains("reason")) << st.ToString();
  }
  EXPECT_EQ(rentals_->Refund(As(admin_), {"rnt_none", Usdc::Micros(1), "x", ""}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(Balance(customer_), paid);
  EXPECT_EQ(Load(r->id).refunded.micros(), 0);

  // A part: 20 % of it from the commission, the rest from the pending earnings.
  auto first = refund(100'000, "the image pull was slow", "k1");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->transfers.size(), 2u);
  EXPECT_EQ(first->transfers[0].kind, billing::kRefundFee);
  EXPECT_EQ(first->transfers[0].amount.micros(), 20'000);
  EXPECT_EQ(first->transfers[1].kind, billing::kRefundProvider);
  EXPECT_EQ(first->transfers[1].debit_account, pending);
  EXPECT_EQ(first->transfers[1].amount.micros(), 80'000);
  EXPECT_EQ(first->transfers[1].reference, "refund: the image pull was slow");
  EXPECT_EQ(first->rental.refunded.micros(), 100'000);
  EXPECT_EQ(Balance(customer_), paid + 100'000);
  EXPECT_EQ(balance(pending), 360'000 - 80'000);
  EXPECT_EQ(balance(platform), 90'000 - 20'000);
  // The same request again (a lost answer): the first refund, nothing moves.
  auto again = refund(100'000, "the image pull was slow", "k1");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->transfers.size(), 2u);
  EXPECT_EQ(Balance(customer_), paid + 100'000);
  EXPECT_TRUE(refund(5, "another", "k1").status().fields().contains("Idempotency-Key"));
  EXPECT_TRUE(refund(350'001, "too much").status().fields().contains("amount_micro"));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM notifications WHERE kind = 'rental.refunded'"), 1);
  ExpectLedgerOk();

  // The hold ends: the release makes available what pending still holds, not the usage.
  clock_.Advance(Seconds(25 * 3600));
  ASSERT_TRUE(rentals_->ReleaseEarnings().ok());
  EXPECT_EQ(balance(pending), 0);
  EXPECT_EQ(balance(available), 280'000);
  // A payout took part of it; the platform has other commissions.
  ASSERT_TRUE(
      db().Transact([&](store::Tx& tx) -> Status {
            return billing::Post(
                       tx, {{"t_paid", "payout_sent", available, billing::ProviderPaidAccount(pia_),
                             Usdc::Micros(200'000), std::nullopt, "", clock_.Now()},
                            {"t_other", "usage_fee", std::string(billing::kWorldOperator), platform,
                             Usdc::Micros(500'000), std::nullopt, "", clock_.Now()}})
                .status();
          })
          .ok());
  // The rest: the commission's share, what is available, the paid-out part from the platform.
  auto rest = refund(350'000, "the machine was slow");
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  ASSERT_EQ(rest->transfers.size(), 3u);
  EXPECT_EQ(rest->transfers[0].amount.micros(), 70'000);  // 90,000 in all
  EXPECT_EQ(rest->transfers[1].debit_account, available);
  EXPECT_EQ(rest->transfers[1].amount.micros(), 80'000);
  EXPECT_EQ(rest->transfers[2].kind, billing::kRefundFee);
  EXPECT_EQ(rest->transfers[2].debit_account, platform);
  EXPECT_EQ(rest->transfers[2].amount.micros(), 200'000);
  EXPECT_EQ(Load(r->id).refunded.micros(), 450'000);
  EXPECT_EQ(Balance(customer_), 10'000'000);
  EXPECT_EQ(balance(available), 0);
  EXPECT_TRUE(refund(1, "more").status().fields().contains("amount_micro"));
  ExpectLedgerOk();
}

// docs/billing.md, "A worked example": two GPUs at 2.20 USDC per GPU-hour, Community
// (20 %), running 1 h 30 min 7 s, metered every minute; the customer stops it.
TEST_P(RentalsTest, TheWorkedExampleOfDocsBilling) {
  ASSERT_TRUE(pricing_->SetProviderPrices(As(pia_), {{kH100, Usdc::Micros(2'200'000)}}).ok());
  Reload();
  Credit(customer_, 20'000'000);
  auto r = rentals_->Create(As(customer_), Request(2));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Run(*r);
  clock_.Advance(Seconds(1));
  Meter();
  EXPECT_EQ(Load(r->id).charged.micros(), 1222);  // floor(4,400,000 × 1 / 3600)
  for (int i = 0; i < 90; ++i) {
    clock_.Advance(Seconds(60));
    Meter();
  }
  clock_.Advance(Seconds(6));
  auto end = rentals_->Stop(As(customer_), r->id);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->billed_seconds, 5407);
  EXPECT_EQ(end->charged.micros(), 6'608'555);
  EXPECT_EQ(end->fee.micros(), 1'321'711);
  EXPECT_EQ(end->provider_part.micros(), 5'286'844);
  EXPECT_EQ(Balance(customer_), 13'391'445);
  ExpectLedgerOk();
}

SubmitJobRequest Job(int64_t gpus, int64_t max_price) {
  SubmitJobRequest j;
  j.constraints.gpu_models = {kH100};
  j.constraints.gpus = gpus;
  j.constraints.max_price = Usdc::Micros(max_price);
  j.container.image = "registry.example/train:1";
  return j;
}

TEST_P(RentalsTest, AJobIsPlacedOnAnOfferThatFitsOrWaitsForOneAndEndsAtItsDeadline) {
  Jobs jobs(faults(), *rentals_, *market_, {.clock = &clock_});
  Credit(customer_, 10'000'000);
  // Too cheap for the only offer: it waits.
  auto cheap = jobs.Submit(As(customer_), Job(1, kPrice - 1));
  ASSERT_TRUE(cheap.ok()) << cheap.status().ToString();
  EXPECT_EQ(Name(cheap->state), "queued");
  auto fits = jobs.Submit(As(customer_), Job(2, kPrice));
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(Name(fits->state), "placed");
  Rental r = Load(fits->rental_id);
  EXPECT_EQ(r.gpus, 2);
  EXPECT_EQ(r.job_id, fits->id);
  // The plan counts the GPUs it gave away: a third job does not get the same ones.
  Reload();
  auto none = jobs.Submit(As(customer_), Job(1, kPrice));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(Name(none->state), "queued");
  // The provider lowers its price: the cheap job is placed once GPUs are free again.
  ASSERT_TRUE(rentals_->Stop(As(customer_), r.id).ok());
  agent_->Event(r.workload_id, "stopped", 0);
  ASSERT_TRUE(pricing_->SetProviderPrices(As(pia_), {{kH100, Usdc::Micros(kPrice - 1)}}).ok());
  Reload();
  ASSERT_EQ(*jobs.ScheduleOnce(), 2);
  EXPECT_EQ(Name(jobs.Get(As(customer_), cheap->id)->state), "placed");
  EXPECT_EQ(Name(jobs.Get(As(customer_), none->id)->state), "placed");
  // No offer at all: unplaceable at the deadline.
  SubmitJobRequest late = Job(1, 1);
  late.deadline_s = 60;
  auto l = jobs.Submit(As(customer_), late);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(Name(l->state), "queued");
  clock_.Advance(Seconds(61));
  ASSERT_TRUE(jobs.ScheduleOnce().ok());
  EXPECT_EQ(Name(jobs.Get(As(customer_), l->id)->state), "unplaceable");
  EXPECT_EQ(jobs.Get(As(oscar_), l->id).status().code(), StatusCode::kNotFound);
}

TEST_P(RentalsTest, ConcurrentSubmittersGetOneGpuEachUntilNoneIsLeft) {
  Jobs jobs(faults(), *rentals_, *market_, {.clock = &clock_});
  Background background;
  jobs.ScheduleOn(background);
  background.Start();
  Credit(customer_, 100'000'000);
  std::vector<std::thread> threads;
  std::vector<StatusOr<rentals::Job>> answers(8, Internal("not run"));
  for (size_t i = 0; i < answers.size(); ++i) {
    threads.emplace_back([&, i] {
      SubmitJobRequest j = Job(1, kPrice);
      j.idempotency_key = "job-" + std::to_string(i % 6);  // two repeats
      answers[i] = jobs.Submit(As(customer_), j);
    });
  }
  for (auto& t : threads) t.join();
  background.Stop();
  std::set<std::string> ids, rentals;
  for (const auto& a : answers) {
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ids.insert(a->id);
    if (a->state == JobState::kPlaced) rentals.insert(a->rental_id);
  }
  EXPECT_EQ(ids.size(), 6u);      // one job per key
  EXPECT_EQ(rentals.size(), 2u);  // the machine's two GPUs, once each
  EXPECT_EQ(Number("SELECT COUNT(*) FROM jobs"), 6);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM rentals"), 2);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM jobs WHERE state = 'queued'"), 4);
}

TEST_P(RentalsTest, BadJobsNameTheirFieldAndStoreNothing) {
  Jobs jobs(faults(), *rentals_, *market_, {.clock = &clock_});
  auto expect = [&](SubmitJobRequest j, const std::string& field) {
    auto r = jobs.Submit(As(customer_), j);
    ASSERT_EQ(r.status().code(), StatusCode::kValidationFailed) << field;
    EXPECT_TRUE(r.status().fields().count(field)) << field << ": " << r.status().ToString();
  };
  SubmitJobRequest j = Job(1, kPrice);
  j.constraints.gpu_models = {};
  expect(j, "gpu_models");
  j = Job(1, kPrice), j.constraints.gpu_models = {"no-such-gpu"}, expect(j, "gpu_models[0]");
  j = Job(0, kPrice), expect(j, "gpus");
  j = Job(9, kPrice), expect(j, "gpus");
  j = Job(1, 0), expect(j, "max_price_micro");
  j = Job(1, kMaxJobPriceMicro + 1), expect(j, "max_price_micro");
  j = Job(1, kPrice), j.constraints.min_reliability = 101, expect(j, "min_reliability");
  j = Job(1, kPrice), j.constraints.min_reliability = -1, expect(j, "min_reliability");
  j = Job(1, kPrice), j.constraints.country = "italy", expect(j, "country");
  j = Job(1, kPrice), j.deadline_s = 59, expect(j, "deadline_s");
  j = Job(1, kPrice), j.deadline_s = kMaxDeadlineS + 1, expect(j, "deadline_s");
  j = Job(1, kPrice), j.container.image = "", expect(j, "image");
  j = Job(1, kPrice), j.container.image = "127.0.0.1:5000/train:1", expect(j, "image");
  j = Job(1, kPrice), j.container.env = {{"NVIDIA_VISIBLE_DEVICES", "all"}},
  expect(j, "env.NVIDIA_VISIBLE_DEVICES");
  j = Job(1, kPrice), j.max_cost = Usdc::Micros(0), expect(j, "max_cost_micro");
  expect(Job(1, kPrice), "balance");  // nothing to pay with
  EXPECT_EQ(Number("SELECT COUNT(*) FROM jobs"), 0);
}

// Issue 24: a balance that covers one hour of one rental held 20, the first-hour check
// counting only the new rental. It counts what the customer's active rentals will still
// draw in their first hour.
TEST_P(RentalsTest, TheFirstHourCheckCountsWhatTheCustomersActiveRentalsHold) {
  Credit(customer_, kPrice);  // one hour of one GPU
  auto first = rentals_->Create(As(customer_), Request());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = rentals_->Create(As(customer_), Request());
  ASSERT_EQ(second.status().code(), StatusCode::kValidationFailed) << second.status().ToString();
  ASSERT_EQ(second.status().fields().count("balance"), 1u) << second.status().ToString();
  EXPECT_NE(second.status().fields().at("balance").find("your 1 active rental"), std::string::npos)
      << second.status().ToString();
  EXPECT_EQ(Number("SELECT COUNT(*) FROM rentals"), 1);
  // Half an hour in, half of its first hour is charged and the other half still held.
  Run(*first);
  clock_.Advance(Seconds(1800));
  Meter();
  EXPECT_EQ(Balance(customer_), kPrice / 2);
  EXPECT_TRUE(rentals_->Create(As(customer_), Request()).status().fields().count("balance"));
  // An hour more on the balance covers a second rental beside the rest of the first's hour.
  Credit(customer_, kPrice);
  auto third = rentals_->Create(As(customer_), Request());
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  // Nothing is left for a job's first hour either.
  Jobs jobs(faults(), *rentals_, *market_, {.clock = &clock_});
  auto job = jobs.Submit(As(customer_), Job(1, kPrice));
  ASSERT_EQ(job.status().code(), StatusCode::kValidationFailed) << job.status().ToString();
  EXPECT_TRUE(job.status().fields().count("balance")) << job.status().ToString();
  // Once the first's hour is paid it holds nothing more: its draw from then on is the
  // running-out rule's (RNT-4).
  clock_.Advance(Seconds(1800));
  Meter();
  auto held = db().Transact([&](store::Tx& tx) -> Status {
    auto h = HeldForFirstHours(tx, customer_);
    if (!h.ok()) return h.status();
    EXPECT_EQ(h->rentals, 1);  // the third, pending
    EXPECT_EQ(h->amount.micros(), kPrice);
    return Status::Ok();
  });
  ASSERT_TRUE(held.ok()) << held.ToString();
  ExpectLedgerOk();
}

TEST_P(RentalsTest, ConcurrentRentalsOnOneHoursBalanceMakeOne) {
  FakeAgent& big = NewAgent(pia_, 8);
  ASSERT_TRUE(big.Join().has_value());
  Reload();
  const CreateRentalRequest req = Request(1, OfferOn(big.machine_id));
  Credit(customer_, kPrice);  // one hour of one GPU
  constexpr size_t kRacers = 8;
  std::vector<StatusOr<Rental>> out(kRacers, Internal("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kRacers; ++i) {
    threads.emplace_back([&, i] { out[i] = rentals_->Create(As(customer_), req); });
  }
  for (auto& t : threads) t.join();
  int made = 0;
  for (const auto& r : out) {
    if (r.ok()) {
      ++made;
      continue;
    }
    EXPECT_EQ(r.status().code(), StatusCode::kValidationFailed) << r.status().ToString();
    EXPECT_TRUE(r.status().fields().count("balance")) << r.status().ToString();
  }
  EXPECT_EQ(made, 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM rentals"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM workloads"), 1);
}

// Issue 24: a provider rented its own GPUs through POST /jobs. One placement rule, in the
// plan and in the commit.
TEST_P(RentalsTest, AProvidersJobIsNeverPlacedOnItsOwnGpus) {
  Jobs jobs(faults(), *rentals_, *market_, {.clock = &clock_});
  Credit(pia_, 10'000'000);
  rentals::Job own;
  own.id = "job_own";
  own.customer_id = pia_;
  own.constraints = Job(1, kPrice).constraints;
  EXPECT_TRUE(Plan(*market_->snapshot(), {own}).empty());
  own.customer_id = customer_;
  EXPECT_EQ(Plan(*market_->snapshot(), {own}).size(), 1u);
  auto j = jobs.Submit(As(pia_), Job(1, kPrice));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(Name(j->state), "queued");
  clock_.Advance(Seconds(2));
  ASSERT_EQ(*jobs.ScheduleOnce(), 0);
  EXPECT_EQ(Name(jobs.Get(As(pia_), j->id)->state), "queued");
  EXPECT_EQ(Number("SELECT COUNT(*) FROM rentals"), 0);
  // The commit checks the rule too, against the machine as stored.
  const std::string pia_offer = OfferId();
  Status direct = db().Transact([&](store::Tx& tx) -> Status {
    CreateRentalRequest req = Request();
    return rentals_
        ->CreateInTx(tx, clock_.Now(), pia_, *market_->snapshot()->Find(pia_offer), req, "")
        .status();
  });
  EXPECT_EQ(direct.fields().count("offer_id"), 1u) << direct.ToString();
  // Another provider's GPU appears: the job goes there.
  Approve(oscar_);
  ASSERT_TRUE(pricing_->SetProviderPrices(As(oscar_), {{kH100, Usdc::Micros(kPrice)}}).ok());
  FakeAgent& other = NewAgent(oscar_, 1);
  ASSERT_TRUE(other.Join().has_value());
  Reload();
  clock_.Advance(Seconds(2));
  ASSERT_EQ(*jobs.ScheduleOnce(), 1);
  auto placed = jobs.Get(As(pia_), j->id);
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ(Name(placed->state), "placed");
  EXPECT_EQ(placed->offer_id, OfferOn(other.machine_id));
  EXPECT_EQ(Load(placed->rental_id).provider_id, oscar_);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM rentals WHERE provider_id = customer_id"), 0);
}

// Issue 24: 530 jobs that no offer could take stalled the scheduler for everyone, as each
// round planned again only the oldest 512 queued jobs.
TEST_P(RentalsTest, AJobThatFitsIsPlacedWithinARoundHoweverManyWaitForNothing) {
  Jobs jobs(faults(), *rentals_, *market_, {.max_queued_per_customer = 1000, .clock = &clock_});
  // 600 jobs that no offer meets (1 to 50 micro-USDC per GPU-hour, a week's deadline),
  // from three customers, queued before the others.
  const std::vector<std::string> who = {customer_, oscar_, admin_};
  ASSERT_TRUE(db().Transact([&](store::Tx& tx) -> Status {
                    RentalsStore s(tx);
                    for (int i = 0; i < 600; ++i) {
                      rentals::Job j;
                      j.id = "job_backlog" + std::to_string(i);
                      j.customer_id = who[static_cast<size_t>(i) % who.size()];
                      j.constraints = Job(1, 1 + i % 50).constraints;
                      j.container.image = "registry.example/train:1";
                      j.state = JobState::kQueued;
                      j.detail = "waiting for an offer that meets the constraints";
                      j.created_at = j.updated_at = clock_.Now();
                      j.deadline_at = clock_.Now() + Seconds(kMaxDeadlineS);
                      GPUNEX_RETURN_IF_ERROR(s.InsertJob(j));
                    }
                    return Status::Ok();
                  })
                  .ok());
  clock_.Advance(Seconds(1));
  Credit(customer_, 10'000'000);
  Credit(oscar_, 10'000'000);
  // Behind them, one with a minute's deadline, and one that fits an offer once its GPUs
  // are free again.
  SubmitJobRequest soon = Job(1, 1);
  soon.deadline_s = 60;
  auto late = jobs.Submit(As(customer_), soon);
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  auto busy = rentals_->Create(As(customer_), Request(2));
  ASSERT_TRUE(busy.ok()) << busy.status().ToString();
  Reload();
  auto fits = jobs.Submit(As(oscar_), Job(1, kPrice));
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(Name(fits->state), "queued");
  ASSERT_TRUE(rentals_->Stop(As(customer_), busy->id).ok());
  agent_->Event(busy->workload_id, "stopped", 0);
  Reload();
  clock_.Advance(Seconds(61));
  ASSERT_EQ(*jobs.ScheduleOnce(), 1);
  EXPECT_EQ(Name(jobs.Get(As(oscar_), fits->id)->state), "placed");
  EXPECT_EQ(Name(jobs.Get(As(customer_), late->id)->state), "unplaceable");
  EXPECT_EQ(Number("SELECT COUNT(*) FROM jobs WHERE state = 'queued'"), 600);
}

TEST_P(RentalsTest, ACustomersQueueIsBoundedButAJobThatFitsIsStillPlaced) {
  Jobs jobs(faults(), *rentals_, *market_, {.max_queued_per_customer = 3, .clock = &clock_});
  Credit(customer_, 10'000'000);
  Credit(oscar_, 10'000'000);
  std::vector<std::string> queued;
  for (int i = 0; i < 3; ++i) {
    auto j = jobs.Submit(As(customer_), Job(1, 1));
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    EXPECT_EQ(Name(j->state), "queued");
    queued.push_back(j->id);
  }
  auto over = jobs.Submit(As(customer_), Job(1, 1));
  EXPECT_EQ(over.status().code(), StatusCode::kFailedPrecondition) << over.status().ToString();
  EXPECT_NE(over.status().message().find("3 jobs queued"), std::string::npos)
      << over.status().ToString();
  EXPECT_EQ(Number("SELECT COUNT(*) FROM jobs"), 3);
  // A job that fits now does not wait: placed, bound or not.
  auto fits = jobs.Submit(As(customer_), Job(1, kPrice));
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(Name(fits->state), "placed");
  // A cancelled job makes room.
  ASSERT_TRUE(jobs.Cancel(As(customer_), queued[0]).ok());
  auto again = jobs.Submit(As(customer_), Job(1, 1));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(Name(again->state), "queued");
  // Another customer's queue is its own, and concurrent submissions count one another.
  Background background;
  jobs.ScheduleOn(background);
  background.Start();
  std::vector<StatusOr<rentals::Job>> answers(6, Internal("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < answers.size(); ++i) {
    threads.emplace_back([&, i] { answers[i] = jobs.Submit(As(oscar_), Job(1, 1)); });
  }
  for (auto& t : threads) t.join();
  background.Stop();
  int accepted = 0;
  for (const auto& a : answers) {
    if (a.ok()) {
      ++accepted;
      EXPECT_EQ(Name(a->state), "queued");
    } else {
      EXPECT_EQ(a.status().code(), StatusCode::kFailedPrecondition) << a.status().ToString();
    }
  }
  EXPECT_EQ(accepted, 3);
  EXPECT_EQ(
      Number("SELECT COUNT(*) FROM jobs WHERE state = 'queued' AND customer_id = ?", {oscar_}), 3);
}

// The oldest job that a commit refuses (here its customer's balance is held by a rental)
// does not keep the GPUs it was planned on from the jobs behind it.
TEST_P(RentalsTest, AJobIsNotHeldBackByAnOlderOneWhoseCommitIsRefused) {
  Jobs jobs(faults(), *rentals_, *market_, {.clock = &clock_});
  const std::string quinn = NewProvider("Quinn");
  Approve(quinn);
  ASSERT_TRUE(pricing_->SetProviderPrices(As(quinn), {{kH100, Usdc::Micros(2 * kPrice)}}).ok());
  FakeAgent& q = NewAgent(quinn, 1);
  ASSERT_TRUE(q.Join().has_value());
  Reload();
  const std::string pia_offer = OfferOn(agent_->machine_id);
  Credit(customer_, 10'000'000);
  Credit(oscar_, 2 * kPrice);
  const CreateRentalRequest one = Request(1, pia_offer);
  auto a = rentals_->Create(As(customer_), one);
  auto b = rentals_->Create(As(customer_), one);
  ASSERT_TRUE(a.ok() && b.ok());
  Reload();
  // Oscar's job waits (Quinn's GPU costs more than it pays); then Oscar rents Quinn's GPU,
  // which holds his whole balance for its first hour.
  auto older = jobs.Submit(As(oscar_), Job(1, kPrice));
  ASSERT_TRUE(older.ok()) << older.status().ToString();
  EXPECT_EQ(Name(older->state), "queued");
  auto quinns = rentals_->Create(As(oscar_), Request(1, OfferOn(q.machine_id)));
  ASSERT_TRUE(quinns.ok()) << quinns.status().ToString();
  clock_.Advance(Seconds(1));
  auto newer = jobs.Submit(As(customer_), Job(1, kPrice));
  ASSERT_TRUE(newer.ok()) << newer.status().ToString();
  EXPECT_EQ(Name(newer->state), "queued");
  // One of Pia's GPUs is free again: Oscar's job is planned first and refused; the next
  // gets the GPU in the same round.
  ASSERT_TRUE(rentals_->Stop(As(customer_), a->id).ok());
  agent_->Event(a->workload_id, "stopped", 0);
  Reload();
  clock_.Advance(Seconds(2));
  ASSERT_EQ(*jobs.ScheduleOnce(), 1);
  EXPECT_EQ(Name(jobs.Get(As(customer_), newer->id)->state), "placed");
  auto waiting = jobs.Get(As(oscar_), older->id);
  EXPECT_EQ(Name(waiting->state), "queued");
  EXPECT_NE(waiting->detail.find("balance"), std::string::npos) << waiting->detail;
}

GPUNEX_INSTANTIATE_BACKENDS(RentalsTest);

TEST(RentalStatesTest, ARentalOnlyMovesForward) {
  static_assert(RentalMayGo(kPending, kStarting));
  static_assert(RentalMayGo(kPending, kRunning));  // the agent reported it running at once
  static_assert(RentalMayGo(kPending, kEnded));    // its start failed
  static_assert(RentalMayGo(kStarting, kRunning));
  static_assert(RentalMayGo(kStarting, kEnding));  // stopped while its image was pulled
  static_assert(RentalMayGo(kRunning, kEnding));
  static_assert(RentalMayGo(kRunning, kEnded));
  static_assert(RentalMayGo(kEnding, kEnded));
  static_assert(!RentalMayGo(kRunning, kStarting));
  static_assert(!RentalMayGo(kRunning, kRunning));
  static_assert(!RentalMayGo(kEnding, kRunning));
  static_assert(!RentalMayGo(kEnded, kEnding));
  static_assert(!RentalMayGo(kEnded, kEnded));
}

// The one table of the states' names: each state has one, and reads back as itself.
TEST(RentalStatesTest, EachStateHasOneNameForTheWireAndTheDatabase) {
  for (RentalState s : {kPending, kStarting, kRunning, kEnding, kEnded}) {
    EXPECT_EQ(kRentalStateNames.Parse(Name(s)), s) << Name(s);
  }
  EXPECT_EQ(Name(kRunning), "running");
  EXPECT_EQ(kRentalStateNames.Parse("paused"), std::nullopt);
  EXPECT_THROW(kRentalStateNames.ParseStored("Running"), std::invalid_argument);
}

// End reasons: each enumerator has its own name, which reads back as itself; the names
// are those the API and the database have always used.
TEST(EndReasonsTest, EachReasonHasOneNameThatReadsBack) {
  std::set<std::string_view> names;
  for (int i = 0; i <= static_cast<int>(EndReason::kOperator); ++i) {
    const auto r = static_cast<EndReason>(i);
    EXPECT_NE(Name(r), "unknown") << i;
    EXPECT_TRUE(names.insert(Name(r)).second) << Name(r);
    EXPECT_EQ(kEndReasonNames.Parse(Name(r)), r) << Name(r);
  }
  EXPECT_EQ(names.size(), kEndReasonNames.entries.size());
  EXPECT_EQ(Name(EndReason::kBalanceExhausted), "balance_exhausted");
  EXPECT_EQ(kEndReasonNames.Parse("crashed"), std::nullopt);
  EXPECT_THROW(kEndReasonNames.ParseStored("Stopped"), std::invalid_argument);
}

}  // namespace
}  // namespace gpunex::platform::rentals
