// The worked examples of docs/payouts.md ("Who is paid, and when"), checked: the run
// dates of both schedules around a holiday, and what each run decides for each provider
// (paid in full, carried over, no method), with the ledger balances the document gives.
// If this test changes, the document changes with it.
//
// The chain here is an empty one (EmptyChain): the platform's wallet does not exist, so a
// Solana payout, once planned, waits for funds. That is enough: the examples are about
// who is paid how much; the chain's side is payouts_test.cc's.
#include <gtest/gtest.h>

#include <string>

#include "common/business_days.h"
#include "common/ids.h"
#include "platform/billing/ledger.h"
#include "platform/payouts/calendar.h"
#include "platform/payouts/payouts.h"
#include "platform/providers/providers.h"
#include "platform/solana/address.h"
#include "platform/testing/platform_test.h"

namespace gpunex::platform::payouts {
namespace {

// A Solana RPC whose chain holds no accounts. Payouts only reads it here: they find the
// platform's wallet empty and wait for funds; nothing is ever sent.
class EmptyChain final : public solana::Rpc {
 public:
  StatusOr<solana::BlockhashInfo> LatestBlockhash(std::string_view) override {
    solana::BlockhashInfo b;
    b.blockhash.fill(7);
    b.last_valid_block_height = 1150;
    b.slot = 5000;
    return b;
  }
  StatusOr<uint64_t> BlockHeight(std::string_view) override { return uint64_t{1000}; }
  StatusOr<std::string> SendTransaction(const std::string&, bool, std::string_view) override {
    return Internal("the docs example sends nothing");
  }
  StatusOr<std::vector<std::optional<solana::SignatureStatus>>> SignatureStatuses(
      const std::vector<std::string>& sigs, bool) override {
    return std::vector<std::optional<solana::SignatureStatus>>(sigs.size());
  }
  StatusOr<std::optional<solana::AccountInfo>> GetAccountInfo(const solana::Pubkey&,
                                                              std::string_view) override {
    return std::optional<solana::AccountInfo>();
  }
  StatusOr<std::vector<solana::SignatureInfo>> SignaturesForAddress(const solana::Pubkey&, int,
                                                                    std::optional<std::string>,
                                                                    std::string_view) override {
    return Internal("not used by payouts");
  }
  StatusOr<std::optional<solana::TransactionInfo>> GetTransaction(const std::string&,
                                                                  std::string_view) override {
    return Internal("not used by payouts");
  }
};

Timestamp At(const char* rfc3339) { return *ParseRfc3339(rfc3339); }
std::string Day(Timestamp t) { return DateOf(t); }

// [review] holidays = ["2027-01-01"], as in the document.
BusinessCalendar NewYearCalendar() { return *BusinessCalendar::Create({"2027-01-01"}); }

TEST(PayoutsDocsCalendar, RunDatesAroundTheNewYearHoliday) {
  const BusinessCalendar cal = NewYearCalendar();
  // Weekly: every Monday, holidays or not.
  EXPECT_TRUE(IsRunDate(Schedule::kWeekly, At("2026-12-07T00:00:00Z"), cal));
  EXPECT_FALSE(IsRunDate(Schedule::kWeekly, At("2026-12-08T00:00:00Z"), cal));
  EXPECT_EQ(Day(NextRunDate(Schedule::kWeekly, At("2026-12-07T00:00:30Z"), cal)), "2026-12-14");
  EXPECT_EQ(Day(LatestRunDate(Schedule::kWeekly, At("2026-12-13T23:59:59Z"), cal)), "2026-12-07");
  // Monthly: the first business day. 2026-12-01 is a Tuesday.
  EXPECT_EQ(Day(FirstBusinessDayOfMonth(At("2026-12-20T00:00:00Z"), cal)), "2026-12-01");
  // 2027-01-01 is a Friday and a holiday, 2 and 3 are the weekend: Monday the 4th.
  EXPECT_EQ(Day(FirstBusinessDayOfMonth(At("2027-01-15T00:00:00Z"), cal)), "2027-01-04");
  EXPECT_EQ(Day(FirstBusinessDayOfMonth(At("2027-01-15T00:00:00Z"), BusinessCalendar())),
            "2027-01-01");  // without the holiday
  EXPECT_FALSE(IsRunDate(Schedule::kMonthly, At("2027-01-01T00:00:00Z"), cal));
  EXPECT_TRUE(IsRunDate(Schedule::kMonthly, At("2027-01-04T00:00:00Z"), cal));
  EXPECT_EQ(Day(NextRunDate(Schedule::kMonthly, At("2026-12-20T10:00:00Z"), cal)), "2027-01-04");
  // On the holiday and the weekend after it, December's run is still the latest.
  EXPECT_EQ(Day(LatestRunDate(Schedule::kMonthly, At("2027-01-03T12:00:00Z"), cal)), "2026-12-01");
  EXPECT_EQ(Day(LatestRunDate(Schedule::kMonthly, At("2027-01-04T00:00:00Z"), cal)), "2027-01-04");
}

class PayoutsDocsExample : public testing::PlatformTest {
 protected:
  void SetUp() override {
    PlatformTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    clock_.Set(At("2026-11-30T12:00:00Z"));
    accounts_ = std::make_unique<accounts::Accounts>(db(), FastAccountsOptions());
    auto admin = accounts_->CreateAdmin("admin@example.com", "admin-password-1", "Ada Admin");
    ASSERT_TRUE(admin.ok());
    admin_ = admin->id;
    auto customer =
        accounts_->SignUp({"carl@example.com", "customer-password", "Carl"}, "192.0.2.9");
    ASSERT_TRUE(customer.ok());
    customer_ = customer->id;
    std::array<uint8_t, 32> seed{};
    seed.fill(200);
    mint_ = solana::KeypairFromSeed(seed).public_key;
    seed.fill(1);
    platform_key_ = solana::KeypairFromSeed(seed);

    PayoutsOptions o;  // the defaults: 50 USDC weekly threshold, 1 USDC monthly minimum
    o.solana_chain.mint = mint_;
    o.ach_originator = {"021000021",  "JPMORGAN CHASE", "1234567890", "GPUNEX INC",
                        "GPUNEX INC", "1234567890",     "011000015"};
    o.automatic_runs = false;
    o.calendar = NewYearCalendar();
    o.clock = &clock_;
    payouts_ = std::make_unique<Payouts>(db(), *accounts_, &chain_, &platform_key_, o);
  }
  void TearDown() override {
    payouts_.reset();
    PlatformTest::TearDown();
  }

  std::string NewProvider(const std::string& name) {
    auto u = accounts_->SignUp({name + "@example.com", "provider-password", name}, "192.0.2.8");
    EXPECT_TRUE(u.ok()) << u.status().ToString();
    EXPECT_TRUE(db().Transact([&](store::Tx& tx) {
                      return providers::UpsertProvider(tx, clock_.Now(), u->id,
                                                       providers::Tier::kCommunity, NewId("app"),
                                                       admin_);
                    })
                    .ok());
    return u->id;
  }
  void Set(const std::string& provider, SettingsUpdate u) {
    u.password = "provider-password";
    auto s = payouts_->PutSettings(As(provider), u);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  static Method Wallet(uint8_t seed_byte) {
    std::array<uint8_t, 32> seed{};
    seed.fill(seed_byte);
    Method m;
    m.kind = MethodKind::kSolana;
    m.wallet = solana::ToBase58(solana::KeypairFromSeed(seed).public_key);
    return m;
  }
  // A rental's earnings credited to the provider's pending balance at `at`.
  void Earn(const std::string& provider, int64_t micros, const char* at) {
    const Timestamp t = At(at);
    const std::string n = NewId("t");
    ASSERT_TRUE(db().Transact([&](store::Tx& tx) -> Status {
                      return billing::Post(
                                 tx,
                                 {{n + "c", "operator_credit", std::string(billing::kWorldOperator),
                                   billing::CustomerAccount(customer_), Usdc::Micros(micros),
                                   std::nullopt, "", t},
                                  {n + "u", "usage_provider", billing::CustomerAccount(customer_),
                                   billing::ProviderPendingAccount(provider), Usdc::Micros(micros),
                                   std::nullopt, "", t}})
                          .status();
                    })
                    .ok());
  }
  // The clock moves to `now`; what was earned until 24 h before is available (as the
  // release task does every minute in gpunexd).
  void ItIsNow(const char* now) {
    clock_.Set(At(now));
    ASSERT_TRUE(db().Transact([&](store::Tx& tx) {
                      return billing::ReleaseEarnings(tx, clock_.Now() - 24 * kOneHour,
                                                      clock_.Now())
                          .status();
                    })
                    .ok());
  }
  StatusOr<RunDetail> RunFor(const std::string& as_of, const std::string& schedule) {
    auto run = payouts_->StartRun(As(admin_), {as_of, schedule, std::nullopt});
    if (!run.ok()) return run.status();
    for (int i = 0; i < 3; ++i) GPUNEX_RETURN_IF_ERROR(payouts_->Tick().status());
    return payouts_->GetRun(As(admin_), run->id);
  }
  const Payout* PayoutOf(const RunDetail& d, const std::string& provider) {
    for (const auto& po : d.payouts) {
      if (po.provider_id == provider) return &po;
    }
    return nullptr;
  }
  std::string SkipOf(const RunDetail& d, const std::string& provider) {
    return Text("SELECT reason FROM payout_skips WHERE run_id = ? AND provider_id = ?",
                {d.run.id, provider});
  }
  int64_t Balance(const std::string& account) {
    return Number("SELECT COALESCE(MAX(balance), 0) FROM ledger_accounts WHERE id = ?", {account});
  }

  EmptyChain chain_;
  std::unique_ptr<accounts::Accounts> accounts_;
  std::unique_ptr<Payouts> payouts_;
  std::string admin_, customer_;
  solana::Pubkey mint_{};
  solana::Keypair platform_key_{};
};

TEST_P(PayoutsDocsExample, TheWeeklyExample) {
  const std::string pia = NewProvider("pia"), oscar = NewProvider("oscar"),
                    nora = NewProvider("nora");
  SettingsUpdate solana;  // the default weekly schedule and 50 USDC threshold
  solana.method = Wallet(11);
  Set(pia, solana);
  SettingsUpdate ach;
  ach.threshold_micro = 100'000'000;
  Method bank;
  bank.kind = MethodKind::kAch;
  bank.holder = "Oscar Smith";
  bank.routing_number = "011000015";
  bank.account_number = "000123456789";
  bank.account_type = "checking";
  ach.method = bank;
  Set(oscar, ach);

  // Week 1.
  Earn(pia, 30'000'000, "2026-12-02T15:00:00Z");
  Earn(pia, 12'300'000, "2026-12-05T09:00:00Z");
  Earn(pia, 9'400'000, "2026-12-06T18:00:00Z");  // less than 24 h before the run
  Earn(oscar, 120'456'789, "2026-12-03T08:00:00Z");
  Earn(nora, 80'000'000, "2026-12-04T12:00:00Z");
  ItIsNow("2026-12-07T00:00:30Z");
  EXPECT_EQ(Balance(billing::ProviderAvailableAccount(pia)), 42'300'000);
  EXPECT_EQ(Balance(billing::ProviderPendingAccount(pia)), 9'400'000);
  // What Pia's Payments page says before the run.
  auto view = payouts_->GetSettings(As(pia));
  ASSERT_TRUE(view.ok());
  EXPECT_FALSE(view->next.eligible);
  EXPECT_EQ(view->next.reason, "below the minimum of 50 USDC: carried over");

  auto week1 = RunFor("2026-12-07", "weekly");
  ASSERT_TRUE(week1.ok()) << week1.status().ToString();
  EXPECT_EQ(SkipOf(*week1, pia), "carried_over");
  EXPECT_EQ(PayoutOf(*week1, pia), nullptr);
  EXPECT_EQ(Balance(billing::ProviderAvailableAccount(pia)), 42'300'000);  // still hers
  EXPECT_EQ(SkipOf(*week1, nora), "no_method");
  EXPECT_EQ(Balance(billing::ProviderAvailableAccount(nora)), 80'000'000);
  // Oscar: a bank pays whole cents; the 0.006789 USDC below a cent stays available.
  const Payout* o = PayoutOf(*week1, oscar);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->amount.micros(), 120'450'000);
  EXPECT_EQ(o->currency, "USD");
  EXPECT_EQ(o->amount_minor, 12'045);
  EXPECT_EQ(Balance(billing::ProviderInPaymentAccount(oscar)), 120'450'000);
  EXPECT_EQ(Balance(billing::ProviderAvailableAccount(oscar)), 6'789);
  // The operator sends the NACHA file and records the bank's answer.
  ASSERT_EQ(week1->run.files.size(), 1u);
  EXPECT_EQ(week1->run.files[0].name, week1->run.id + "-ach.txt");
  EXPECT_EQ(week1->run.files[0].total_minor, 12'045);
  ASSERT_TRUE(payouts_->MarkFileSent(As(admin_), week1->run.id, week1->run.files[0].name).ok());
  auto paid = payouts_->SetBankResult(As(admin_), o->id, {BankOutcome::kPaid, "", ""});
  ASSERT_TRUE(paid.ok()) << paid.status().ToString();
  EXPECT_EQ(Name(paid->state), "confirmed");
  EXPECT_EQ(Balance(billing::ProviderPaidAccount(oscar)), 120'450'000);
  EXPECT_EQ(Balance(billing::ProviderInPaymentAccount(oscar)), 0);

  // Week 2: Sunday's 9.40 became available on Monday at 18:00, and Pia earned 3.45 more.
  Earn(pia, 3'450'000, "2026-12-10T11:00:00Z");
  ItIsNow("2026-12-14T00:00:30Z");
  EXPECT_EQ(Balance(billing::ProviderAvailableAccount(pia)), 55'150'000);
  auto week2 = RunFor("2026-12-14", "weekly");
  ASSERT_TRUE(week2.ok()) << week2.status().ToString();
  const Payout* p = PayoutOf(*week2, pia);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->amount.micros(), 55'150'000);  // the whole balance, not what is above 50
  EXPECT_EQ(p->fee.micros(), 0);
  EXPECT_EQ(Balance(billing::ProviderAvailableAccount(pia)), 0);
  EXPECT_EQ(Balance(billing::ProviderInPaymentAccount(pia)), 55'150'000);
  // This example's chain has an empty platform wallet: the payout waits for funds.
  EXPECT_EQ(Name(p->state), "waiting_funds");
  EXPECT_EQ(Name(week2->run.state), "waiting");
  // Oscar's 0.006789 is below every threshold: carried over again.
  EXPECT_EQ(SkipOf(*week2, oscar), "carried_over");
  EXPECT_EQ(Number("SELECT COALESCE(SUM(balance), 0) FROM ledger_accounts"), 0);
}

TEST_P(PayoutsDocsExample, TheMonthlyExampleAroundAHoliday) {
  const std::string lena = NewProvider("lena");
  SettingsUpdate u;
  u.schedule = "monthly";
  u.method = Wallet(21);
  Set(lena, u);

  Earn(lena, 800'000, "2026-11-28T10:00:00Z");
  ItIsNow("2026-12-01T00:00:30Z");
  auto december = RunFor("2026-12-01", "monthly");
  ASSERT_TRUE(december.ok()) << december.status().ToString();
  EXPECT_EQ(SkipOf(*december, lena), "carried_over");  // 0.80 < 1 USDC
  EXPECT_EQ(Name(december->run.state), "done");

  Earn(lena, 1'200'000, "2026-12-03T12:00:00Z");
  Earn(lena, 1'250'000, "2026-12-20T16:00:00Z");
  // A weekly run does not look at a monthly provider.
  ItIsNow("2026-12-07T00:00:30Z");
  auto weekly = RunFor("2026-12-07", "weekly");
  ASSERT_TRUE(weekly.ok());
  EXPECT_EQ(Number("SELECT COUNT(*) FROM payout_skips WHERE run_id = ? AND provider_id = ?",
                   {weekly->run.id, lena}),
            0);
  EXPECT_EQ(PayoutOf(*weekly, lena), nullptr);

  ItIsNow("2027-01-04T00:00:30Z");
  // The 1st is a holiday: no monthly run is made for it.
  auto holiday = payouts_->StartRun(As(admin_), {"2027-01-01", "monthly", std::nullopt});
  ASSERT_EQ(holiday.status().code(), StatusCode::kValidationFailed);
  EXPECT_EQ(holiday.status().fields().at("as_of"), "must be the first business day of its month");
  auto january = RunFor("2027-01-04", "monthly");
  ASSERT_TRUE(january.ok()) << january.status().ToString();
  const Payout* p = PayoutOf(*january, lena);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->amount.micros(), 3'250'000);  // 0.80 + 1.20 + 1.25
  EXPECT_EQ(Balance(billing::ProviderAvailableAccount(lena)), 0);
  EXPECT_EQ(Balance(billing::ProviderInPaymentAccount(lena)), 3'250'000);
}

GPUNEX_INSTANTIATE_BACKENDS(PayoutsDocsExample);

}  // namespace
}  // namespace gpunex::platform::payouts
